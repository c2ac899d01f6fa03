// The host's database: one writer (this process), WAL, synchronous=NORMAL (a commit survives a
// process crash; the shutdown flush runs with synchronous=FULL to survive power loss too).
// Checkpoints run inline on this connection, every WAL_AUTOCHECKPOINT_PAGES. They must: the WAL
// restarts only when a write begins with every frame checkpointed, which a checkpointer on another
// thread never achieves while turns keep committing (the WAL grew by gigabytes under load).
// The threshold is large so that the checkpoint's two fsyncs hit one turn in several hundred;
// between checkpoints the WAL is synced to disk in the background (wal-sync.ts).
// Writes are units of work; `commit` groups units into one transaction (group-gathering.ts), so
// concurrent turns share their commits. SQLite's commit is synchronous: a group is committed as
// soon as it has gathered.
import { Blobs } from '../blobs.js';
import { chmodSync } from 'node:fs';
import Database from 'better-sqlite3';
import { HistoryCache } from '../history-cache.js';
import type { ChatMessage } from '../../protocol/chat.js';
import type { RecoveredSession, RetainReason } from '../../protocol/outbound.js';
import {
  DEFAULT_HISTORY_CACHE_MIB,
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
import { checkBudget, ROLL_UP_LOST_SQL, type BudgetExceeded, type NumberedQuery } from '../ledger.js';
import { FORK_ORIGIN_SQL, lineMessagesSql, MESSAGE_COUNT_SQL, OWN_TURNS_FROM_SQL, TURN_SPAN_SQL } from '../session-line.js';
import { QUEUE_SQL, SUBMIT_COLUMNS, toQueuedPrompt, toSubmitRecord, type QueueRow, type SubmitRecord, type SubmitRow } from '../store-writer.js';
import { GroupGathering } from '../group-gathering.js';
import { migrate } from './schema.js';
import { SqliteHomes } from './sqlite-homes.js';
import { FINISH_DELETE_SQL, TOMBSTONE_SQL, TOMBSTONES_SQL, toTombstone, type Tombstone } from '../session-life.js';
import { numberedQuery } from './numbered-query.js';
import { SqliteWriter } from './sqlite-writer.js';
import { syncWalPeriodically, type WalSync } from './wal-sync.js';

/** 16 MiB of 4 KiB pages: the WAL's bound, and how many writes share one checkpoint's fsyncs. */
export const WAL_AUTOCHECKPOINT_PAGES = 4000;

export class SqliteStore implements Store {
  private readonly gathering = new GroupGathering(() => this.flushQueued());
  /**
   * Writes owed by commits that failed (a turn's undoing after a full disk): each is run at the
   * start of the next transaction, which carries it or fails with it. Order: oldest first.
   */
  private owed: Work[] = [];
  private readonly writer: SqliteWriter;
  private readonly selectSession: Database.Statement<[string]>;
  private readonly selectMessages: Database.Statement;
  private readonly selectTurnSpan: Database.Statement;
  private readonly selectOwnTurns: Database.Statement;
  private readonly selectQueue: Database.Statement<[{ 1: string }]>;
  private readonly selectSubmit: Database.Statement<[string, string]>;
  private readonly selectTurn: Database.Statement<[string]>;
  /** The ledger's statements, shared with PostgreSQL. */
  private readonly query: NumberedQuery;
  /**
   * Runs its argument in one transaction. Made once: better-sqlite3 builds a new wrapper for each
   * `db.transaction(fn)`, 15 µs of a 37 µs one-row commit on this machine.
   */
  private readonly inTransaction: (body: () => void) => void;
  private committed = 0;

  private readonly walSync: WalSync;

  readonly history: HistoryCache;
  readonly homes: SqliteHomes;
  readonly blobs: Blobs;
  readonly kind = 'sqlite';

  private constructor(readonly db: Database.Database, private readonly file: string, historyCacheBytes: number) {
    this.history = new HistoryCache(historyCacheBytes);
    this.homes = new SqliteHomes(db);
    this.query = numberedQuery(db);
    this.blobs = new Blobs(this.query);
    this.writer = new SqliteWriter(db);
    this.walSync = syncWalPeriodically(`${file}-wal`);
    // Positions run 0 … n-1 without holes: the last one gives the count from the key, without a scan
    // (a fork's first positions are its parent's: a fork without rows of its own has its prefix).
    this.selectSession = db.prepare(`
      SELECT sid, session_key, status, history_version, overrides, cwd, queue_revision, agent_session_id, agent,
             ${MESSAGE_COUNT_SQL} AS message_count,
             (SELECT COUNT(*) FROM submits WHERE submits.sid = sessions.sid) AS submit_count
      FROM sessions WHERE sid = ? AND branch_of IS NULL`);
    this.selectMessages = db.prepare(lineMessagesSql(MESSAGE_COLUMNS));
    this.selectTurnSpan = db.prepare(TURN_SPAN_SQL);
    this.selectOwnTurns = db.prepare(OWN_TURNS_FROM_SQL);
    this.selectQueue = db.prepare(QUEUE_SQL);
    this.selectTurn = db.prepare('SELECT status FROM turns WHERE turn_id = ?');
    this.selectSubmit = db.prepare(`SELECT ${SUBMIT_COLUMNS} FROM submits s LEFT JOIN queue q ON q.queue_id = s.queue_id WHERE s.sid = ? AND s.client_message_id = ?`);
    this.inTransaction = db.transaction((body: () => void) => body());
  }

  static open(file: string, options: { historyCacheMib?: number } = {}): SqliteStore {
    const db = new Database(file);
    // Private like its home; SQLite gives the -wal and -shm files the database file's mode.
    chmodSync(file, 0o600);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('busy_timeout = 5000');
    db.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`);
    migrate(db);
    return new SqliteStore(db, file, (options.historyCacheMib ?? DEFAULT_HISTORY_CACHE_MIB) * 1024 * 1024);
  }

  /** Transactions committed since the store was opened (how well commits are grouped). */
  get transactionsCommitted(): number {
    return this.committed;
  }

  owe(work: Work): void {
    this.owed.push(work);
  }

  /**
   * Runs `body` in one transaction, paying what is owed first; what was owed is settled only if it
   * commits, and the history cache learns what it wrote only then.
   */
  private transact(body: () => void): void {
    const owed = this.owed;
    this.writer.committedHistory = [];
    try {
      this.inTransaction(() => {
        for (const work of owed) work(this.writer);
        body();
        this.writer.settle();
      });
      this.committed++;
    } catch (err) {
      this.writer.discardPending();
      throw err;
    }
    for (const change of this.writer.committedHistory.splice(0)) change(this.history);
    if (owed.length > 0) this.owed = this.owed.slice(owed.length);
  }

  commit(work: Work): Promise<void> {
    return this.gathering.add(work);
  }

  /**
   * One transaction now, outside the group queue (which is flushed first so order holds).
   * `durable` commits with synchronous=FULL: the WAL is fsynced before this returns.
   */
  async commitNow(work: Work, options: { durable?: boolean } = {}): Promise<void> {
    this.commitNowSync(work, options);
  }

  /** commitNow, for the callers that own this store (start, tests). */
  commitNowSync(work: Work, options: { durable?: boolean } = {}): void {
    this.flushQueued();
    if (!options.durable) {
      this.transact(() => work(this.writer));
      return;
    }
    this.db.pragma('synchronous = FULL');
    try {
      this.transact(() => work(this.writer));
    } finally {
      this.db.pragma('synchronous = NORMAL');
    }
  }

  /** Commits everything queued, synchronously. */
  flushQueued(): void {
    if (this.gathering.length === 0) return;
    const batch = this.gathering.take();
    try {
      this.transact(() => {
        for (const item of batch) item.work(this.writer);
      });
    } catch {
      // The group rolled back as a whole; re-run each unit alone so one bad unit fails alone.
      for (const item of batch) {
        try {
          this.transact(() => item.work(this.writer));
        } catch (err) {
          item.reject(err as Error);
          continue;
        }
        item.resolve();
      }
      return;
    }
    for (const item of batch) item.resolve();
  }

  async loadSession(sid: string): Promise<StoredSession | undefined> {
    const row = this.selectSession.get(sid) as SessionRowWithCounts | undefined;
    return row && toStoredSession(row, (this.selectQueue.all({ 1: sid }) as QueueRow[]).map(toQueuedPrompt));
  }

  async messages(sid: string, from = 0, to = Number.MAX_SAFE_INTEGER): Promise<ChatMessage[]> {
    return this.messagesNow(sid, from, to);
  }

  /** messages(), read at once: SQLite reads block. */
  messagesNow(sid: string, from = 0, to = Number.MAX_SAFE_INTEGER): ChatMessage[] {
    const cached = this.history.read(sid, from, to);
    if (cached !== undefined) return cached;
    const all = (this.selectMessages.all({ 1: sid }) as MessageRow[]).map(toChatMessage);
    this.history.fill(sid, all);
    return all.slice(from, to);
  }

  async turnSpan(sid: string, turnId: string | null): Promise<TurnSpan | null> {
    return (this.selectTurnSpan.get({ 1: sid, 2: turnId }) as TurnSpan | undefined) ?? null;
  }

  async forkOrigin(sid: string): Promise<ForkOrigin | null> {
    return (this.db.prepare(FORK_ORIGIN_SQL).get({ 1: sid }) as ForkOrigin | undefined) ?? null;
  }

  async isDeleted(sid: string): Promise<boolean> {
    return this.db.prepare(TOMBSTONE_SQL).get({ 1: sid }) !== undefined;
  }

  async tombstones(since: number): Promise<Tombstone[]> {
    return (this.db.prepare(TOMBSTONES_SQL).all({ 1: since }) as Parameters<typeof toTombstone>[0][]).map(toTombstone);
  }

  async finishDelete(sid: string): Promise<void> {
    this.db.transaction(() => {
      for (const sql of FINISH_DELETE_SQL) this.db.prepare(sql).run({ 1: sid });
    })();
  }

  async sessionWorkspace(sid: string): Promise<SessionWorkspace> {
    const row = this.db.prepare(SESSION_WORKSPACE_SQL).get({ 1: sid }) as { owner: string | null; flat: number } | undefined;
    return { owner: row?.owner ?? null, flat: row?.flat === 1 };
  }

  async ownTurnsFrom(sid: string, seq: number): Promise<string[]> {
    return (this.selectOwnTurns.all({ 1: sid, 2: seq }) as { turn_id: string }[]).map((r) => r.turn_id);
  }

  async submitRecord(sid: string, clientMessageId: string): Promise<SubmitRecord | undefined> {
    const row = this.selectSubmit.get(sid, clientMessageId) as SubmitRow | undefined;
    return row === undefined ? undefined : toSubmitRecord(row);
  }

  async turnStatus(turnId: string): Promise<StoredTurnStatus | null> {
    return (this.selectTurn.get(turnId) as { status: StoredTurnStatus } | undefined)?.status ?? null;
  }

  overBudget(person: string, now = Date.now()): Promise<BudgetExceeded | null> {
    return checkBudget(this.query, person, now);
  }

  async queuedSessions(): Promise<string[]> {
    return (this.db.prepare('SELECT DISTINCT sid FROM queue ORDER BY sid').all() as { sid: string }[]).map((r) => r.sid);
  }

  async recoverCrashedBoots(now = Date.now()): Promise<RecoveryCounts> {
    return this.db.transaction((): RecoveryCounts => {
      const run = (sql: string): number => this.db.prepare(sql).run({ 1: now }).changes;
      const boots = run(CRASH_RECOVERY_SQL.closeBoots);
      const lost = (this.db.prepare(LOST_TURNS_SQL).all({ 1: null }) as LostTurn[]).map(numericStart);
      this.db.prepare(ROLL_UP_LOST_SQL).run({ 1: now });
      const lostTurns = run(CRASH_RECOVERY_SQL.loseTurns);
      const retainedSessions = run(CRASH_RECOVERY_SQL.retainSessions);
      const expiredRequests = run(CRASH_RECOVERY_SQL.expireRequests);
      this.requeueSteeredTexts();
      return { boots, lostTurns, lost, retainedSessions, expiredRequests };
    })();
  }

  /**
   * Steered texts the turn never took (it died, or was retained by a shutdown) go back to the head
   * of their session's queue, in the order they were steered (PROTOCOL.md §2.1).
   */
  private requeueSteeredTexts(): void {
    const steered = this.db.prepare('SELECT queue_id, sid FROM queue WHERE steered = 1 ORDER BY sid, position').all() as { queue_id: string; sid: string }[];
    const head = this.db.prepare('SELECT MIN(position) AS min FROM queue WHERE sid = ? AND steered = 0');
    const place = this.db.prepare('UPDATE queue SET steered = 0, position = ? WHERE queue_id = ?');
    const bySid = new Map<string, { queue_id: string }[]>();
    for (const row of steered) bySid.set(row.sid, [...(bySid.get(row.sid) ?? []), row]);
    for (const [sid, rows] of bySid) {
      const min = (head.get(sid) as { min: number | null }).min ?? rows.length;
      rows.forEach((row, i) => place.run(min - rows.length + i, row.queue_id));
    }
  }

  async retainedSessions(): Promise<RecoveredSession[]> {
    const rows = this.db
      .prepare("SELECT sid, session_key, retained_reason FROM sessions WHERE status = 'retained' ORDER BY updated_at, sid")
      .all() as { sid: string; session_key: string; retained_reason: string | null }[];
    return rows.map((r) => ({ sid: r.sid, session_key: r.session_key, reason: (r.retained_reason ?? 'crash') as RetainReason }));
  }

  /**
   * Leaves everything in the database file: SQLite checkpoints on close only when it is the last
   * connection, and the daemon's reader usually is not gone yet, so a quiet home would otherwise
   * keep its whole history in the WAL. A checkpoint a reader blocks is skipped, never fatal.
   */
  async release(): Promise<void> {
    // One host owns the whole database: there is no lease to give back.
  }

  health(): StoreHealth {
    return { store: `sqlite ${this.file}`, reachable: true };
  }

  async close(): Promise<void> {
    this.closeNow();
  }

  closeNow(): void {
    this.flushQueued();
    this.walSync.stop();
    try {
      this.db.pragma('wal_checkpoint(TRUNCATE)');
    } catch {
      // busy past busy_timeout: the WAL stays, and the next open replays it
    }
    this.db.close();
  }
}
