// A node's leases on the sessions it runs (PROTOCOL.md §6.2), with fencing epochs: a session is
// claimed as it is loaded (taken when free or expired, at epoch + 1, or kept at this node's epoch),
// renewed with the node's heartbeat, given back when released and at a clean stop. The store's
// every write is fenced by these epochs, so a node that lost a lease writes nothing more of it.
import type pg from 'pg';
import { OwnedElsewhere, type Takeover } from '../store.js';
import { recoverSession } from './recovery.js';

/** A host that runs as one node of several on the database (PROTOCOL.md §6.2). */
export interface NodeOptions {
  id: string;
  leaseSecs: number;
  /** Where other nodes reach this one (its HTTP edge), shown in `status`. */
  url?: string;
  /** Its catalogue of agents' digest (AGENT.md §8), as of each heartbeat: `turnhost cluster` shows each node's. */
  catalogue?: () => string;
}

export class NodeLeases {
  /** The sessions whose leases this host took, at the epoch it took each. */
  private readonly epochs = new Map<string, number>();
  /** What a claim recovered of a session another node left, until the load that made it returns it. */
  private readonly takeovers = new Map<string, Takeover>();

  constructor(
    readonly node: NodeOptions,
    private readonly pool: pg.Pool,
    /** The store's account of a failure: it notes the server as away, and gives the error to throw. */
    private readonly failed: (err: Error) => Error,
    /** The store's writing connection, connected again when it was lost. */
    private readonly writer: () => Promise<unknown>,
  ) {}

  /** The epoch this host holds the session's lease at; -1 when it holds none, which the fence refuses. */
  epochOf(sid: string): number {
    return this.epochs.get(sid) ?? -1;
  }

  /** The fence refused a write of these sessions: another node holds them now. */
  lost(sids: readonly string[]): void {
    for (const sid of sids) this.epochs.delete(sid);
  }

  /** What the claim that loaded the session recovered of the node it was taken from; given once. */
  takeover(sid: string): Takeover | undefined {
    const recovered = this.takeovers.get(sid);
    this.takeovers.delete(sid);
    return recovered;
  }

  /**
   * Takes the session's lease when it is free or expired (epoch + 1), or keeps the one this host
   * holds. A lease taken from a node that died (or paused past it) recovers what that node left of
   * the session, in the same transaction: as after a local crash.
   */
  async claim(sid: string): Promise<void> {
    const client = await this.pool.connect().catch((err: Error) => Promise.reject(this.failed(err)));
    try {
      await client.query('BEGIN');
      const held = this.epochOf(sid);
      const before = await client.query<{ node_id: string }>('SELECT node_id FROM leases WHERE sid = $1 FOR UPDATE', [sid]);
      const { rows } = await client.query<{ epoch: number }>(
        `INSERT INTO leases AS l (sid, node_id, epoch, expires_at) VALUES ($1, $2, 1, now() + make_interval(secs => $3))
         ON CONFLICT (sid) DO UPDATE SET node_id = EXCLUDED.node_id, expires_at = EXCLUDED.expires_at,
           epoch = CASE WHEN l.node_id = EXCLUDED.node_id AND l.epoch = $4 THEN l.epoch ELSE l.epoch + 1 END
         WHERE l.expires_at < now() OR (l.node_id = EXCLUDED.node_id AND l.epoch = $4)
         RETURNING epoch`,
        [sid, this.node.id, this.node.leaseSecs, held],
      );
      const taken = rows[0];
      if (taken === undefined) {
        const owner = await client.query<{ node_id: string }>('SELECT node_id FROM leases WHERE sid = $1', [sid]);
        await client.query('ROLLBACK');
        throw new OwnedElsewhere(sid, owner.rows[0]?.node_id ?? 'unknown');
      }
      const recovered = taken.epoch !== held ? await recoverSession(client, sid) : null;
      await client.query('COMMIT');
      this.epochs.set(sid, taken.epoch);
      // Any lease taken from a holder (a node dead or paused, or an earlier start of this one) is a
      // takeover, even with nothing lost: the queue it left (one whose head had failed to start) must run.
      const fromNode = before.rows[0]?.node_id;
      if (recovered !== null && fromNode !== undefined) this.takeovers.set(sid, { fromNode, ...recovered });
    } catch (err) {
      if (err instanceof OwnedElsewhere) {
        client.release();
        throw err;
      }
      // Its transaction's state is unknown: the connection is closed (the server rolls back), not pooled.
      client.release(true);
      throw this.failed(err as Error);
    }
    client.release();
  }

  async release(sid: string): Promise<void> {
    const epoch = this.epochs.get(sid);
    if (epoch === undefined) return;
    this.epochs.delete(sid);
    await this.pool.query('DELETE FROM leases WHERE sid = $1 AND node_id = $2 AND epoch = $3', [sid, this.node.id, epoch]).catch(() => {});
  }

  /**
   * The node's heartbeat, one statement: its row in `nodes`, and the leases it holds, at their
   * epochs (a lease another node took is not renewed).
   */
  async renew(): Promise<void> {
    const sids = [...this.epochs.keys()];
    try {
      // Only the holder of the node's lock renews: a node that lost it (another start of the
      // same id took it) lets its leases expire. Connecting again here also brings the writer
      // back after a restart of the server before any turn needs it.
      await this.writer();
      await this.pool.query(
        `WITH renewed AS (
           UPDATE leases SET expires_at = now() + make_interval(secs => $2)
           FROM unnest($3::text[], $4::bigint[]) AS held(sid, epoch)
           WHERE leases.sid = held.sid AND leases.epoch = held.epoch AND leases.node_id = $1
           RETURNING 1)
         INSERT INTO nodes (node_id, url, heartbeat_at, sessions, catalogue) VALUES ($1, $5, now(), (SELECT count(*) FROM renewed), $6)
         ON CONFLICT (node_id) DO UPDATE SET url = EXCLUDED.url, heartbeat_at = EXCLUDED.heartbeat_at, sessions = EXCLUDED.sessions, catalogue = EXCLUDED.catalogue`,
        [this.node.id, this.node.leaseSecs, sids, sids.map((sid) => this.epochs.get(sid)!), this.node.url ?? null, this.node.catalogue?.() ?? null],
      );
    } catch (err) {
      // The server is away: the next renewal tries again, and a lease that expires meanwhile is fenced.
      this.failed(err as Error);
    }
  }

  /** A clean stop gives the leases back (another node may take the sessions at once) and leaves the cluster. */
  async releaseAll(): Promise<void> {
    await this.pool
      .query('WITH released AS (DELETE FROM leases WHERE node_id = $1 AND sid = ANY($2)) DELETE FROM nodes WHERE node_id = $1', [this.node.id, [...this.epochs.keys()]])
      .catch(() => {});
  }
}
