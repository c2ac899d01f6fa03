// The host's database in PostgreSQL (PROTOCOL.md §6.1). Its commit is asynchronous: a group is
// sent while the next one gathers (group-gathering.ts), one transaction per group with its
// statements pipelined on the one writing connection, and groups commit one after another in the
// order they gathered, so the frames that wait on them leave in order. That connection also holds
// the advisory lock that keeps a second host off the database. Reads run on a small pool and see
// what has committed.
//
// When the server goes away, each group fails (its units' turns end with reason `storage`), the
// next group connects again, and the lock is taken again with the connection; a read fails the
// same way. Nothing is half-written: a group is one transaction. A connection lost during COMMIT
// leaves the outcome unknown to us; the units are failed, and the turn's undoing (owed work)
// corrects the rows once the server is back.
import { PostgresHomes } from './postgres-homes.js';
import { FINISH_DELETE_SQL, TOMBSTONE_SQL, TOMBSTONES_SQL, toTombstone, type Tombstone } from '../session-life.js';
import pg from 'pg';
import type { ChatMessage } from '../../protocol/chat.js';
import type { RecoveredSession, RetainReason } from '../../protocol/outbound.js';
import { GroupGathering, type Unit } from '../group-gathering.js';
import { HistoryCache } from '../history-cache.js';
import type { StoreLocation } from '../store-location.js';
import {
  DEFAULT_HISTORY_CACHE_MIB,
  LeaseLost,
  LOST_TURNS_SQL,
  nodeLockWaitMs,
  numericStart,
  OwnedElsewhere,
  toChatMessage,
  toStoredSession,
  type LostTurn,
  type MessageRow,
  type RecoveryCounts,
  type SessionRowWithCounts,
  type Store,
  type StoreHealth,
  type StoredSession,
  type StoredTurnStatus,
  type ForkOrigin,
  type TurnSpan,
  type Takeover,
  type Work,
  SESSION_WORKSPACE_SQL,
  type SessionWorkspace,
} from '../store.js';
import { checkBudget, ROLL_UP_LOST_SQL, ROLL_UP_SESSION_LOST_SQL, type BudgetExceeded } from '../ledger.js';
import { FORK_ORIGIN_SQL, lineMessagesSql, MESSAGE_COUNT_SQL, OWN_TURNS_FROM_SQL, TURN_SPAN_SQL } from '../session-line.js';
import { SUBMIT_COLUMNS, toSubmitRecord, type QueuedPrompt, type SubmitRecord, type SubmitRow } from '../store-writer.js';
import { clientConfig, described, IDLE_IN_TRANSACTION_MS, isConnectionError, readPool } from './connection.js';
import { PostgresWriter, type PendingStatement } from './postgres-writer.js';
import { HOST_LOCK, LEASE_LOST_CODE, migrate } from './schema.js';

type PostgresLocation = Extract<StoreLocation, { kind: 'postgres' }>;

/** How long a group whose COMMIT went unanswered waits to learn whether it committed, and how often it asks. */
const OUTCOME_WAIT_MS = IDLE_IN_TRANSACTION_MS + 5_000;
const OUTCOME_RETRY_MS = 250;

/** A statement PostgreSQL refused because an earlier one of its transaction failed. */
const IN_FAILED_TRANSACTION = '25P02';

/** The host's lock is held by another connection: another compute host uses this database. */
export class DatabaseTaken extends Error {}

/** A host that runs as one node of several on the database (PROTOCOL.md §6.2). */
export interface NodeOptions {
  id: string;
  leaseSecs: number;
  /** Where other nodes reach this one (its HTTP edge), shown in `status`. */
  url?: string;
  /** Its catalogue of agents' digest (AGENT.md §8), as of each heartbeat: `turnhost cluster` shows each node's. */
  catalogue?: () => string;
}

export interface PostgresStoreOptions {
  historyCacheMib?: number;
  node?: NodeOptions;
}

export class PostgresStore implements Store {
  readonly history: HistoryCache;
  readonly homes: PostgresHomes;
  readonly kind = 'postgres';
  private readonly gathering = new GroupGathering(() => this.commitGathered());
  /** Writes owed by groups that failed (a turn's undoing): each committed on its own before the next group. */
  private owed: Work[] = [];
  private readonly writer = new PostgresWriter();
  /** The group being committed; the next one gathers meanwhile. */
  private committing: Promise<void> | null = null;
  private client: pg.Client | null;
  private connecting: Promise<pg.Client> | null = null;
  private problem: string | undefined;
  /** As a node: the sessions whose leases this host took, at the epoch it took each. */
  private readonly leases = new Map<string, number>();
  /** What a claim recovered of a session another node left, until the load that made it returns it. */
  private readonly takeovers = new Map<string, Takeover>();
  private renewal: NodeJS.Timeout | undefined;

  private constructor(
    private readonly location: PostgresLocation,
    client: pg.Client,
    private readonly pool: pg.Pool,
    historyCacheBytes: number,
    private readonly node: NodeOptions | undefined,
  ) {
    this.client = client;
    this.history = new HistoryCache(historyCacheBytes);
    this.homes = new PostgresHomes(pool, node?.id ?? null);
    this.watch(client);
    if (node !== undefined) {
      // Three renewals a lease: a renewal lost to a slow moment leaves two more before it expires.
      this.renewal = setInterval(() => void this.renewLeases(), (node.leaseSecs * 1000) / 3);
      this.renewal.unref();
    }
  }

  /** Connects, migrates, and takes the host's lock; throws (DatabaseTaken among others) when it cannot. */
  static async open(location: PostgresLocation, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const client = await connectWriter(location, true, options.node);
    const pool = readPool(location);
    const store = new PostgresStore(location, client, pool, (options.historyCacheMib ?? DEFAULT_HISTORY_CACHE_MIB) * 1024 * 1024, options.node);
    await store.renewLeases(); // the node shows in the cluster from its start
    return store;
  }

  commit(work: Work): Promise<void> {
    return this.gathering.add(work);
  }

  async commitNow(work: Work): Promise<void> {
    // Every commit is durable here (synchronous_commit is the server's); now = without gathering.
    const committed = this.gathering.add(work);
    this.commitGathered();
    await committed;
  }

  owe(work: Work): void {
    this.owed.push(work);
  }

  /** Waits until everything queued has been committed (or has failed). */
  async flush(): Promise<void> {
    while (this.committing !== null || this.gathering.length > 0) {
      this.commitGathered();
      await this.committing;
    }
  }

  private commitGathered(): void {
    if (this.committing !== null || this.gathering.length === 0) return;
    this.committing = this.commitGroup(this.gathering.take()).finally(() => {
      this.committing = null;
      this.commitGathered();
    });
  }

  private async commitGroup(batch: Unit[]): Promise<void> {
    try {
      await this.transact(batch.map((unit) => unit.work));
    } catch (err) {
      // A server that is gone fails every unit alike; a statement refused fails its unit alone.
      if (isConnectionError(err as Error) || batch.length === 1) {
        for (const unit of batch) unit.reject(err as Error);
        return;
      }
      for (const unit of batch) {
        await this.transact([unit.work]).then(unit.resolve, unit.reject);
      }
      return;
    }
    for (const unit of batch) unit.resolve();
  }

  /**
   * One transaction of `works`, after what is owed (each owed write in a transaction of its own:
   * one for a session whose lease was lost since can never commit, and is dropped); the cache
   * learns what it wrote once it has committed.
   */
  private async transact(works: Work[]): Promise<void> {
    while (this.owed.length > 0) {
      try {
        await this.transactOnce([this.owed[0]!]);
      } catch (err) {
        if (!(err instanceof LeaseLost)) throw err;
      }
      this.owed.shift();
    }
    await this.transactOnce(works);
  }

  private async transactOnce(works: Work[]): Promise<void> {
    this.writer.statements = [];
    this.writer.sids = new Set();
    this.writer.committedHistory = [];
    try {
      for (const work of works) work(this.writer);
      this.writer.settle();
    } catch (err) {
      this.writer.statements = [];
      this.writer.discardPending();
      throw err;
    }
    const { statements, sids } = this.writer;
    const changes = this.writer.committedHistory;
    this.writer.statements = [];
    this.writer.committedHistory = [];
    await this.send(statements, [...sids]);
    for (const change of changes) change(this.history);
  }

  /**
   * BEGIN, the fence (as a node: this node still holds the sessions it writes, at their epochs),
   * the statements and COMMIT in one pipeline: one round trip for the group.
   */
  private async send(statements: PendingStatement[], sids: string[]): Promise<void> {
    const client = await this.connection();
    const fenced = this.node !== undefined && sids.length > 0;
    // In the pipeline's order, as they are sent: the transaction's id comes back before its COMMIT.
    const begin = client.query('BEGIN');
    const txid = client.query<{ txid: string }>('SELECT txid_current()::text AS txid');
    const queries = [
      begin,
      txid,
      ...(fenced ? [client.query('SELECT fence($1, $2, $3)', [this.node!.id, sids, sids.map((sid) => this.leases.get(sid) ?? -1)])] : []),
      ...statements.map((s) => client.query({ name: s.name, text: s.text, values: s.values as unknown[] })),
      client.query('COMMIT'),
    ];
    const settled = await Promise.allSettled(queries);
    const commitFailure = settled.at(-1)!.status === 'rejected' ? (settled.at(-1) as PromiseRejectedResult).reason as Error : null;
    if (commitFailure !== null) {
      // A COMMIT with no answer leaves the transaction's state on that connection unknown: it is
      // dropped (the server rolls back what did not commit), never used again for the next group.
      this.drop(client);
      // The connection went away with the COMMIT under way: it may have committed. The server says
      // which once it answers again; a group reported failed that in fact committed would leave a
      // session's memory behind its rows (a queued prompt run out of its order, found by the chaos run).
      const id = await txid.then((r) => r.rows[0]?.txid, () => undefined);
      if (isConnectionError(commitFailure) && id !== undefined && (await this.outcomeOf(id)) === 'committed') {
        this.problem = undefined;
        return;
      }
    }
    const failures = settled.filter((r): r is PromiseRejectedResult => r.status === 'rejected').map((r) => r.reason as Error);
    const cause = failures.find((e) => (e as Error & { code?: string }).code !== IN_FAILED_TRANSACTION) ?? failures[0];
    if ((cause as (Error & { code?: string }) | undefined)?.code === LEASE_LOST_CODE) {
      for (const sid of sids) this.leases.delete(sid);
      throw new LeaseLost(sids);
    }
    if (cause !== undefined) throw this.failed(cause);
    const commit = settled.at(-1) as PromiseFulfilledResult<pg.QueryResult>;
    if (commit.value.command !== 'COMMIT') throw this.failed(new Error('the transaction was rolled back'));
    this.problem = undefined;
  }

  /**
   * Whether a transaction whose COMMIT went unanswered committed, as the server says
   * (txid_status) once it answers again; null when it cannot say within OUTCOME_WAIT_MS. A
   * transaction still `in progress` is one whose backend has not yet seen its client go: it ends
   * by IDLE_IN_TRANSACTION_MS at the latest, aborted.
   */
  private async outcomeOf(txid: string): Promise<'committed' | 'aborted' | null> {
    const deadline = Date.now() + OUTCOME_WAIT_MS;
    while (Date.now() < deadline) {
      const status = await this.pool.query<{ status: string | null }>('SELECT txid_status($1::bigint) AS status', [txid]).then(
        (r) => r.rows[0]?.status ?? null,
        () => null, // the server is still away
      );
      if (status === 'committed' || status === 'aborted') return status;
      await new Promise((resolve) => setTimeout(resolve, OUTCOME_RETRY_MS));
    }
    return null;
  }

  /**
   * The writing connection, connected again after the server went away, with the same locks as
   * at start: a node's shared share of the host's lock and its own (a node that asked for the
   * single host's lock here would be refused by its peers' shares for good).
   */
  private async connection(): Promise<pg.Client> {
    if (this.client !== null) return this.client;
    this.connecting ??= connectWriter(this.location, false, this.node).finally(() => {
      this.connecting = null;
    });
    try {
      this.client = await this.connecting;
    } catch (err) {
      throw this.failed(err as Error);
    }
    this.problem = undefined;
    this.watch(this.client);
    return this.client;
  }

  private watch(client: pg.Client): void {
    const lost = (): void => {
      if (this.client === client) this.client = null;
    };
    client.on('error', (err) => {
      this.problem = described(err).message;
      lost();
    });
    client.on('end', lost);
  }

  /** Notes why the store failed, when the server is unreachable; gives the error to throw. */
  private failed(err: Error): Error {
    const error = err instanceof DatabaseTaken ? err : described(err);
    if (isConnectionError(err) || err instanceof DatabaseTaken) this.problem = error.message;
    if (isConnectionError(err) && this.client !== null) this.drop(this.client);
    return error;
  }

  private drop(client: pg.Client): void {
    if (this.client === client) this.client = null;
    void client.end().catch(() => {});
  }

  private async read<R extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<R[]> {
    try {
      const result = await this.pool.query<R>(text, values);
      return result.rows;
    } catch (err) {
      throw this.failed(err as Error);
    }
  }

  async loadSession(sid: string): Promise<StoredSession | undefined> {
    if (this.node !== undefined) await this.claim(sid, this.node);
    const [rows, queue] = await Promise.all([
      this.read<SessionRowWithCounts>(
        `SELECT sid, session_key, status, history_version, overrides, cwd, queue_revision, agent_session_id, agent,
                ${MESSAGE_COUNT_SQL} AS message_count,
                (SELECT COUNT(*)::int FROM submits WHERE submits.sid = sessions.sid) AS submit_count
         FROM sessions WHERE sid = $1 AND branch_of IS NULL`,
        [sid],
      ),
      this.read<QueuedPrompt>(
        `SELECT queue_id AS "queueId", text, client_message_id AS "clientMessageId", request_id AS "requestId", turn_id AS "turnId",
                queued_at AS "queuedAt", position, by_user AS "by"
         FROM queue WHERE sid = $1 ORDER BY position`,
        [sid],
      ),
    ]);
    const takenOver = this.takeovers.get(sid);
    this.takeovers.delete(sid);
    if (rows[0] === undefined) return undefined;
    return { ...toStoredSession(rows[0], queue), ...(takenOver === undefined ? {} : { takenOver }) };
  }

  /**
   * Takes the session's lease when it is free or expired (epoch + 1), or keeps the one this host
   * holds. A lease taken from a node that died (or paused past it) recovers what that node left of
   * the session, in the same transaction: as after a local crash.
   */
  private async claim(sid: string, node: NodeOptions): Promise<void> {
    const client = await this.pool.connect().catch((err: Error) => Promise.reject(this.failed(err)));
    try {
      await client.query('BEGIN');
      const held = this.leases.get(sid) ?? -1;
      const before = await client.query<{ node_id: string }>('SELECT node_id FROM leases WHERE sid = $1 FOR UPDATE', [sid]);
      const { rows } = await client.query<{ epoch: number }>(
        `INSERT INTO leases AS l (sid, node_id, epoch, expires_at) VALUES ($1, $2, 1, now() + make_interval(secs => $3))
         ON CONFLICT (sid) DO UPDATE SET node_id = EXCLUDED.node_id, expires_at = EXCLUDED.expires_at,
           epoch = CASE WHEN l.node_id = EXCLUDED.node_id AND l.epoch = $4 THEN l.epoch ELSE l.epoch + 1 END
         WHERE l.expires_at < now() OR (l.node_id = EXCLUDED.node_id AND l.epoch = $4)
         RETURNING epoch`,
        [sid, node.id, node.leaseSecs, held],
      );
      const taken = rows[0];
      if (taken === undefined) {
        const owner = await client.query<{ node_id: string }>('SELECT node_id FROM leases WHERE sid = $1', [sid]);
        await client.query('ROLLBACK');
        throw new OwnedElsewhere(sid, owner.rows[0]?.node_id ?? 'unknown');
      }
      const recovered = taken.epoch !== held ? await recoverSession(client, sid) : null;
      await client.query('COMMIT');
      this.leases.set(sid, taken.epoch);
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
    const epoch = this.leases.get(sid);
    if (this.node === undefined || epoch === undefined) return;
    this.leases.delete(sid);
    await this.pool.query('DELETE FROM leases WHERE sid = $1 AND node_id = $2 AND epoch = $3', [sid, this.node.id, epoch]).catch(() => {});
  }

  /**
   * The node's heartbeat, one statement: its row in `nodes`, and the leases it holds, at their
   * epochs (a lease another node took is not renewed).
   */
  private async renewLeases(): Promise<void> {
    if (this.node === undefined) return;
    const sids = [...this.leases.keys()];
    try {
      // Only the holder of the node's lock renews: a node that lost it (another start of the
      // same id took it) lets its leases expire. Connecting again here also brings the writer
      // back after a restart of the server before any turn needs it.
      await this.connection();
      await this.pool.query(
        `WITH renewed AS (
           UPDATE leases SET expires_at = now() + make_interval(secs => $2)
           FROM unnest($3::text[], $4::bigint[]) AS held(sid, epoch)
           WHERE leases.sid = held.sid AND leases.epoch = held.epoch AND leases.node_id = $1
           RETURNING 1)
         INSERT INTO nodes (node_id, url, heartbeat_at, sessions, catalogue) VALUES ($1, $5, now(), (SELECT count(*) FROM renewed), $6)
         ON CONFLICT (node_id) DO UPDATE SET url = EXCLUDED.url, heartbeat_at = EXCLUDED.heartbeat_at, sessions = EXCLUDED.sessions, catalogue = EXCLUDED.catalogue`,
        [this.node.id, this.node.leaseSecs, sids, sids.map((sid) => this.leases.get(sid)!), this.node.url ?? null, this.node.catalogue?.() ?? null],
      );
    } catch (err) {
      // The server is away: the next renewal tries again, and a lease that expires meanwhile is fenced.
      this.failed(err as Error);
    }
  }

  async messages(sid: string, from = 0, to = Number.MAX_SAFE_INTEGER): Promise<ChatMessage[]> {
    const cached = this.history.read(sid, from, to);
    if (cached !== undefined) return cached;
    const ticket = this.history.startRead(sid);
    let rows: MessageRow[];
    try {
      rows = await this.read<MessageRow>(lineMessagesSql('m.role, m.content, m.tool_calls, m.tool_call_id'), [sid]);
    } finally {
      ticket.overtaken ||= !this.history.endRead(sid, ticket);
    }
    const all = rows.map(toChatMessage);
    if (!ticket.overtaken) this.history.fill(sid, all);
    return all.slice(from, to);
  }

  async submitRecord(sid: string, clientMessageId: string): Promise<SubmitRecord | undefined> {
    const [row] = await this.read<SubmitRow>(
      `SELECT ${SUBMIT_COLUMNS} FROM submits s LEFT JOIN queue q ON q.queue_id = s.queue_id WHERE s.sid = $1 AND s.client_message_id = $2`,
      [sid, clientMessageId],
    );
    return row === undefined ? undefined : toSubmitRecord(row);
  }

  async turnSpan(sid: string, turnId: string | null): Promise<TurnSpan | null> {
    return (await this.read<TurnSpan>(TURN_SPAN_SQL, [sid, turnId]))[0] ?? null;
  }

  async forkOrigin(sid: string): Promise<ForkOrigin | null> {
    return (await this.read<ForkOrigin>(FORK_ORIGIN_SQL, [sid]))[0] ?? null;
  }

  async isDeleted(sid: string): Promise<boolean> {
    return (await this.read(TOMBSTONE_SQL, [sid])).length > 0;
  }

  async tombstones(since: number): Promise<Tombstone[]> {
    return (await this.read<Parameters<typeof toTombstone>[0]>(TOMBSTONES_SQL, [since])).map(toTombstone);
  }

  async finishDelete(sid: string): Promise<void> {
    for (const sql of FINISH_DELETE_SQL) await this.pool.query(sql, [sid]);
  }

  async sessionWorkspace(sid: string): Promise<SessionWorkspace> {
    const row = (await this.read<{ owner: string | null; flat: boolean }>(SESSION_WORKSPACE_SQL, [sid]))[0];
    return { owner: row?.owner ?? null, flat: row?.flat === true };
  }

  async ownTurnsFrom(sid: string, seq: number): Promise<string[]> {
    return (await this.read<{ turn_id: string }>(OWN_TURNS_FROM_SQL, [sid, seq])).map((r) => r.turn_id);
  }

  async turnStatus(turnId: string): Promise<StoredTurnStatus | null> {
    return (await this.read<{ status: StoredTurnStatus }>('SELECT status FROM turns WHERE turn_id = $1', [turnId]))[0]?.status ?? null;
  }

  overBudget(person: string, now = Date.now()): Promise<BudgetExceeded | null> {
    return checkBudget(async <R>(text: string, values: readonly unknown[]) => (await this.read(text, [...values])) as R[], person, now);
  }

  async queuedSessions(): Promise<string[]> {
    return (await this.read<{ sid: string }>('SELECT DISTINCT sid FROM queue ORDER BY sid')).map((r) => r.sid);
  }

  async recoverCrashedBoots(now = Date.now()): Promise<RecoveryCounts> {
    // As a node, only this node's own earlier boots are closed; their sessions are recovered as they are taken again.
    if (this.node !== undefined) return { boots: await this.endNodeBoots(now), lostTurns: 0, lost: [], retainedSessions: 0, expiredRequests: 0 };
    const client = await this.connection();
    await client.query('BEGIN');
    try {
      const count = async (text: string): Promise<number> => (await client.query(text, [now])).rowCount ?? 0;
      const lost = (await client.query<LostTurn>(LOST_TURNS_SQL, [null])).rows.map(numericStart);
      await client.query(ROLL_UP_LOST_SQL, [now]);
      const counts: RecoveryCounts = {
        lost,
        boots: await count("UPDATE boots SET ended_at = $1, end_reason = 'crash' WHERE ended_at IS NULL"),
        lostTurns: await count("UPDATE turns SET status = 'lost', ended_at = $1, error = 'host died' WHERE status = 'running'"),
        retainedSessions: await count(
          "UPDATE sessions SET status = 'retained', retained_reason = 'crash', end_reason = NULL, updated_at = $1 WHERE status = 'active'",
        ),
        expiredRequests: await count("UPDATE server_requests SET status = 'expired', reason = 'host died', resolved_at = $1 WHERE status = 'open'"),
      };
      await client.query(REQUEUE_STEERED, [null]);
      await client.query('COMMIT');
      return counts;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      throw this.failed(err as Error);
    }
  }

  async retainedSessions(): Promise<RecoveredSession[]> {
    const rows = await this.read<{ sid: string; session_key: string; retained_reason: string | null }>(
      "SELECT sid, session_key, retained_reason FROM sessions WHERE status = 'retained' ORDER BY updated_at, sid",
    );
    return rows.map((r) => ({ sid: r.sid, session_key: r.session_key, reason: (r.retained_reason ?? 'crash') as RetainReason }));
  }

  health(): StoreHealth {
    return { store: this.location.shown, reachable: this.problem === undefined, ...(this.problem ? { problem: this.problem } : {}) };
  }

  /**
   * A node's earlier boots that never ended are closed as crashes. Their sessions are recovered
   * one at a time, when this node (or another) takes each one's lease again (claim): never by
   * assuming that the leases of a boot before are still this node's.
   */
  private async endNodeBoots(now: number): Promise<number> {
    const client = await this.connection();
    const result = await client.query("UPDATE boots SET ended_at = $1, end_reason = 'crash' WHERE ended_at IS NULL AND node_id = $2", [now, this.node!.id]);
    return result.rowCount ?? 0;
  }

  async close(): Promise<void> {
    clearInterval(this.renewal);
    await this.flush();
    // A clean stop gives its leases back (another node may take the sessions at once) and leaves the cluster.
    if (this.node !== undefined) {
      await this.pool
        .query('WITH released AS (DELETE FROM leases WHERE node_id = $1 AND sid = ANY($2)) DELETE FROM nodes WHERE node_id = $1', [this.node.id, [...this.leases.keys()]])
        .catch(() => {});
    }
    await this.client?.end().catch(() => {});
    this.client = null;
    await this.pool.end().catch(() => {});
  }
}

/**
 * Steered texts the turn never took go back to the head of their queue, in the order steered
 * (PROTOCOL.md §2.1): every session's ($1 null), or one session's.
 */
const REQUEUE_STEERED = `
  WITH steered AS (
    SELECT queue_id, sid, row_number() OVER (PARTITION BY sid ORDER BY position) AS i, count(*) OVER (PARTITION BY sid) AS n
    FROM queue WHERE steered = 1 AND ($1::text IS NULL OR sid = $1)
  ), heads AS (SELECT sid, min(position) AS head FROM queue WHERE steered = 0 AND ($1::text IS NULL OR sid = $1) GROUP BY sid)
  UPDATE queue SET steered = 0, position = COALESCE(heads.head, steered.n) - steered.n + steered.i - 1
  FROM steered LEFT JOIN heads ON heads.sid = steered.sid
  WHERE queue.queue_id = steered.queue_id`;

/**
 * What a node that lost the session left running dies with it: durability rule 5, for one
 * session. Says which turns were lost and which requests expired, for the session's clients.
 */
async function recoverSession(client: pg.PoolClient, sid: string, now = Date.now()): Promise<Omit<Takeover, 'fromNode'>> {
  const lost = (await client.query<LostTurn>(LOST_TURNS_SQL, [sid])).rows.map(numericStart);
  await client.query(ROLL_UP_SESSION_LOST_SQL, [now, sid]);
  await client.query("UPDATE turns SET status = 'lost', ended_at = $2, error = 'node lost' WHERE sid = $1 AND status = 'running'", [sid, now]);
  await client.query(
    "UPDATE sessions SET status = 'retained', retained_reason = 'crash', end_reason = NULL, updated_at = $2 WHERE sid = $1 AND status = 'active'",
    [sid, now],
  );
  const requests = await client.query<{ id: string; method: string }>(
    "UPDATE server_requests SET status = 'expired', reason = 'node lost', resolved_at = $2 WHERE sid = $1 AND status = 'open' RETURNING id, method",
    [sid, now],
  );
  await client.query(REQUEUE_STEERED, [sid]);
  return { lostTurns: lost, expiredRequests: requests.rows };
}

/**
 * The writing connection, pipelined, holding the host's lock: all of it for a single host, a
 * share of it for a node (nodes run together; a single host and a node refuse each other), and a
 * node's own lock, so that one node id runs once. `migrating`: at start, the schema is brought up
 * to date first.
 */
async function connectWriter(location: PostgresLocation, migrating: boolean, node?: NodeOptions): Promise<pg.Client> {
  const client = new pg.Client({ ...clientConfig(location, 'host'), pipeline: true } as pg.ClientConfig);
  client.on('error', () => {}); // until the store watches it: a failure shows in the query that meets it
  try {
    await client.connect();
    if (migrating) await migrate(client);
    const lock = node === undefined ? 'pg_try_advisory_lock($1)' : 'pg_try_advisory_lock_shared($1)';
    const { rows } = await client.query<{ locked: boolean }>(`SELECT ${lock} AS locked`, [HOST_LOCK]);
    if (rows[0]?.locked !== true) {
      throw new DatabaseTaken(node === undefined ? `another compute host is using the database ${location.shown}` : `a single host uses the database ${location.shown}`);
    }
    if (node !== undefined) {
      await takeNodeLock(client, node);
      await client.query("SELECT set_config('turnhost.node_id', $1, false)", [node.id]);
    }
  } catch (err) {
    await client.end().catch(() => {});
    throw err;
  }
  return client;
}

/** How often a starting node looks again at its own lock while an earlier start of it holds it. */
const NODE_LOCK_RETRY_MS = 200;

const NODE_LOCK_KEY = "hashtext('turnhost node ' || $1::text)::bigint";

/**
 * The node's own lock. A node killed with -9 lets go of it at once (the server sees its socket
 * close), but a connection the server still believes in (a client gone behind a dead network,
 * one left idle in a transaction) keeps it. So a start that finds it taken waits and watches the
 * node's heartbeat: a heartbeat that moves is a running node, and this start is refused; one that
 * grows older than a lease is an earlier start of this node, dead or cut off (fencing keeps it
 * from writing what it no longer owns), and the connections holding the lock are ended.
 */
async function takeNodeLock(client: pg.Client, node: NodeOptions): Promise<void> {
  const deadline = Date.now() + nodeLockWaitMs(node.leaseSecs);
  let firstBeat: number | null | undefined;
  for (;;) {
    const { rows } = await client.query<{ locked: boolean; beat: number | null; age_ms: number | null }>(
      `SELECT pg_try_advisory_lock(${NODE_LOCK_KEY}) AS locked,
              (SELECT (extract(epoch FROM heartbeat_at) * 1000)::bigint FROM nodes WHERE node_id = $1) AS beat,
              (SELECT (extract(epoch FROM now() - heartbeat_at) * 1000)::int FROM nodes WHERE node_id = $1) AS age_ms`,
      [node.id],
    );
    const { locked, beat, age_ms: ageMs } = rows[0]!;
    if (locked) return;
    firstBeat ??= beat;
    if ((beat !== null && beat !== firstBeat) || Date.now() > deadline) {
      throw new DatabaseTaken(`node ${node.id} is already running (its heartbeat is ${ageMs === null ? 'missing' : `${ageMs} ms old`})`);
    }
    if (ageMs === null || ageMs > node.leaseSecs * 1000) await endHoldersOfNodeLock(client, node.id);
    await new Promise((resolve) => setTimeout(resolve, NODE_LOCK_RETRY_MS));
  }
}

/** The backends holding the node's lock, other than this one, are ended (an advisory lock on a bigint key shows as classid:objid). */
async function endHoldersOfNodeLock(client: pg.Client, nodeId: string): Promise<void> {
  await client.query(
    `SELECT pg_terminate_backend(pid) FROM pg_locks
     WHERE locktype = 'advisory' AND granted AND objsubid = 1 AND pid <> pg_backend_pid()
       AND ((classid::bigint << 32) | objid::bigint) = ${NODE_LOCK_KEY}`,
    [nodeId],
  );
}
