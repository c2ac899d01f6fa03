// A guest's home in PostgreSQL (persistence/home-snapshots.ts), on the store's pool of its own
// connections, never the turns' writer: a snapshot is one transaction of its own, and a node that
// no longer holds the session's lease writes none.
import { wholeContent } from '../blobs.js';
import type pg from 'pg';
import { stopPoint } from '../stop-points.js';
import {
  HOME_ENTRIES_SQL,
  HOME_NEXT_VERSION_SQL,
  HOME_UPSERT_ENTRY_SQL,
  HOME_VERSION_SQL,
  toHomeEntry,
  type HomeEntry,
  type HomeSnapshot,
  type HomeSnapshots,
} from '../home-snapshots.js';

/** Inside a snapshot's transaction, its entries written: where a test restarts the server to show a snapshot is all or nothing. */
const STOP_MID_SNAPSHOT = stopPoint('home-entries-written');

/** Another node holds the session's lease: its home is that node's to keep. */
const HELD_ELSEWHERE_SQL = 'SELECT 1 FROM leases WHERE sid = $1 AND node_id IS DISTINCT FROM $2 AND expires_at > now()';

export class PostgresHomes implements HomeSnapshots {
  constructor(
    private readonly pool: pg.Pool,
    /** This node's id; null for a single host, which holds every session. */
    private readonly nodeId: string | null,
  ) {}

  async version(sid: string): Promise<number> {
    const { rows } = await this.pool.query<{ version: string }>(HOME_VERSION_SQL, [sid]);
    return rows[0] === undefined ? 0 : Number(rows[0].version);
  }

  async snapshot(sid: string): Promise<HomeSnapshot> {
    return this.inTransaction(async (client) => {
      const version = (await client.query<{ version: string }>(HOME_VERSION_SQL, [sid])).rows[0]?.version;
      const { rows } = await client.query<Parameters<typeof toHomeEntry>[0]>(HOME_ENTRIES_SQL, [sid]);
      return { version: version === undefined ? 0 : Number(version), entries: rows.map(toHomeEntry) };
    }, 'REPEATABLE READ');
  }

  async missing(hashes: readonly string[]): Promise<string[]> {
    if (hashes.length === 0) return [];
    const { rows } = await this.pool.query<{ sha256: string }>('SELECT sha256 FROM home_contents WHERE sha256 = ANY($1::text[])', [hashes]);
    const held = new Set(rows.map((row) => row.sha256));
    return hashes.filter((hash) => !held.has(hash));
  }

  async putContents(contents: readonly { sha256: string; bytes: Buffer }[]): Promise<void> {
    for (const { sha256, bytes } of contents) {
      await this.pool.query('INSERT INTO home_contents (sha256, bytes) VALUES ($1, $2) ON CONFLICT (sha256) DO NOTHING', [sha256, bytes]);
    }
  }

  async contents(hashes: readonly string[]): Promise<Map<string, Buffer>> {
    if (hashes.length === 0) return new Map();
    const { rows } = await this.pool.query<{ sha256: string; bytes: Buffer }>('SELECT sha256, bytes FROM home_contents WHERE sha256 = ANY($1::text[])', [hashes]);
    const chunks = await this.pool.query<{ sha256: string; bytes: Buffer }>('SELECT sha256, bytes FROM content_chunks WHERE sha256 = ANY($1::text[]) ORDER BY sha256, seq', [hashes]);
    return new Map(rows.map((row) => [row.sha256, wholeContent(row.bytes, chunks.rows.filter((chunk) => chunk.sha256 === row.sha256).map((chunk) => chunk.bytes))]));
  }

  async commit(sid: string, base: number, changed: readonly HomeEntry[], removed: readonly string[], now = Date.now()): Promise<number | null> {
    return this.inTransaction(async (client) => {
      if ((await client.query(HELD_ELSEWHERE_SQL, [sid, this.nodeId])).rowCount !== 0) return null;
      if ((await client.query(HOME_NEXT_VERSION_SQL, [sid, base, now])).rowCount === 0) return null;
      for (const e of changed) await client.query(HOME_UPSERT_ENTRY_SQL, [sid, e.path, e.kind, e.mode, e.sha256, e.target, e.size]);
      if (removed.length > 0) await client.query('DELETE FROM home_entries WHERE sid = $1 AND path = ANY($2::text[])', [sid, removed]);
      STOP_MID_SNAPSHOT?.();
      return base + 1;
    });
  }

  /** `body` in one transaction; rolled back (and its error thrown) when it throws, or when it answers null. */
  private async inTransaction<T>(body: (client: pg.PoolClient) => Promise<T>, isolation = 'READ COMMITTED'): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query(`BEGIN ISOLATION LEVEL ${isolation}`);
      const result = await body(client);
      await client.query(result === null ? 'ROLLBACK' : 'COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      throw err;
    } finally {
      client.release();
    }
  }
}
