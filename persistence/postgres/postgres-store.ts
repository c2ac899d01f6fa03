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
import { Blobs } from '../blobs.js';
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
  type Work,
  SESSION_WORKSPACE_SQL,
  MESSAGE_COLUMNS,
  type SessionWorkspace,
} from '../store.js';
import { CRASH_RECOVERY_SQL, LOST_TURNS_SQL, numericStart } from '../crash-recovery.js';
import { checkBudget, ROLL_UP_LOST_SQL, type BudgetExceeded } from '../ledger.js';
import { FORK_ORIGIN_SQL, lineMessagesSql, MESSAGE_COUNT_SQL, OWN_TURNS_FROM_SQL, TURN_SPAN_SQL } from '../session-line.js';
import { QUEUE_SQL, SUBMIT_COLUMNS, toQueuedPrompt, toSubmitRecord, type QueueRow, type SubmitRecord, type SubmitRow } from '../store-writer.js';
import { described, IDLE_IN_TRANSACTION_MS, isConnectionError, readPool } from './connection.js';
import { NodeLeases, type NodeOptions } from './node-leases.js';
import { PostgresWriter, type PendingStatement } from './postgres-writer.js';
import { REQUEUE_STEERED } from './recovery.js';
import { connectWriter, DatabaseTaken } from './writer-connection.js';
import { LEASE_LOST_CODE } from './schema.js';

type PostgresLocation = Extract<StoreLocation, { kind: 'postgres' }>;

/** How long a group whose COMMIT went unanswered waits to learn whether it committed, and how often it asks. */
const OUTCOME_WAIT_MS = IDLE_IN_TRANSACTION_MS + 5_000;
const OUTCOME_RETRY_MS = 250;

/** A statement PostgreSQL refused because an earlier one of its transaction failed. */
const IN_FAILED_TRANSACTION = '25P02';

export interface PostgresStoreOptions {
  historyCacheMib?: number;
  node?: NodeOptions;
}

export class PostgresStore implements Store {
  readonly history: HistoryCache;
  readonly homes: PostgresHomes;
  readonly blobs: Blobs;
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
  /** As a node: its leases on the sessions it runs; null for a single host. */
  private readonly leases: NodeLeases | null;
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
    this.blobs = new Blobs(async (sql, params) => (await pool.query(sql, [...params])).rows);
    this.watch(client);
    this.leases = node === undefined ? null : new NodeLeases(node, pool, (err) => this.failed(err), () => this.connection());
    if (node !== undefined) {
      // Three renewals a lease: a renewal lost to a slow moment leaves two more before it expires.
      this.renewal = setInterval(() => void this.leases?.renew(), (node.leaseSecs * 1000) / 3);
      this.renewal.unref();
    }
  }

  /** Connects, migrates, and takes the host's lock; throws (DatabaseTaken among others) when it cannot. */
  static async open(location: PostgresLocation, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const client = await connectWriter(location, true, options.node);
    const pool = readPool(location);
    const store = new PostgresStore(location, client, pool, (options.historyCacheMib ?? DEFAULT_HISTORY_CACHE_MIB) * 1024 * 1024, options.node);
    await store.leases?.renew(); // the node shows in the cluster from its start
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
    const fence = this.leases !== null && sids.length > 0 ? this.leases : null;
    // In the pipeline's order, as they are sent: the transaction's id comes back before its COMMIT.
    const begin = client.query('BEGIN');
    const txid = client.query<{ txid: string }>('SELECT txid_current()::text AS txid');
    const queries = [
      begin,
      txid,
      ...(fence === null ? [] : [client.query('SELECT fence($1, $2, $3)', [fence.node.id, sids, sids.map((sid) => fence.epochOf(sid))])]),
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
      this.leases?.lost(sids);
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
    await this.leases?.claim(sid);
    const [rows, queue] = await Promise.all([
      this.read<SessionRowWithCounts>(
        `SELECT sid, session_key, status, history_version, overrides, cwd, queue_revision, agent_session_id, agent,
                ${MESSAGE_COUNT_SQL} AS message_count,
                (SELECT COUNT(*)::int FROM submits WHERE submits.sid = sessions.sid) AS submit_count
         FROM sessions WHERE sid = $1 AND branch_of IS NULL`,
        [sid],
      ),
      this.read<QueueRow>(QUEUE_SQL, [sid]),
    ]);
    const takenOver = this.leases?.takeover(sid);
    if (rows[0] === undefined) return undefined;
    return { ...toStoredSession(rows[0], queue.map(toQueuedPrompt)), ...(takenOver === undefined ? {} : { takenOver }) };
  }

  async release(sid: string): Promise<void> {
    await this.leases?.release(sid);
  }

  async messages(sid: string, from = 0, to = Number.MAX_SAFE_INTEGER): Promise<ChatMessage[]> {
    const cached = this.history.read(sid, from, to);
    if (cached !== undefined) return cached;
    const ticket = this.history.startRead(sid);
    let rows: MessageRow[];
    try {
      rows = await this.read<MessageRow>(lineMessagesSql(MESSAGE_COLUMNS), [sid]);
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
        boots: await count(CRASH_RECOVERY_SQL.closeBoots),
        lostTurns: await count(CRASH_RECOVERY_SQL.loseTurns),
        retainedSessions: await count(CRASH_RECOVERY_SQL.retainSessions),
        expiredRequests: await count(CRASH_RECOVERY_SQL.expireRequests),
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
    await this.leases?.releaseAll();
    await this.client?.end().catch(() => {});
    this.client = null;
    await this.pool.end().catch(() => {});
  }
}

