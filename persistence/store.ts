// The host's database: one writer (this process), WAL, synchronous=NORMAL (a commit survives a
// process crash; the shutdown flush runs with synchronous=FULL to survive power loss too).
// Checkpoints run inline on this connection, every WAL_AUTOCHECKPOINT_PAGES. They must: the WAL
// restarts only when a write begins with every frame checkpointed, which a checkpointer on another
// thread never achieves while turns keep committing (the WAL grew by gigabytes under load).
// The threshold is large so that the checkpoint's two fsyncs hit one turn in several hundred;
// between checkpoints the WAL is synced to disk in the background (wal-sync.ts).
// Writes are units of work; `commit` groups units into one transaction, so concurrent turns share
// their commits. Units of one burst of frames reach the queue over a few event-loop turns, so a
// group commits once the queue has not grown for IDLE_LOOKS_BEFORE_COMMIT turns of the loop, or
// GROUP_WAIT_MS after its first unit. A lone writer pays two idle loop turns (microseconds).
import { chmodSync } from 'node:fs';
import Database from 'better-sqlite3';
import { HistoryCache } from './history-cache.js';
import type { ChatMessage } from '../protocol/chat.js';
import type { RecoveredSession, RetainReason } from '../protocol/outbound.js';
import { migrate } from './schema.js';
import { StoreWriter, type QueuedPrompt, type SubmitRecord } from './store-writer.js';
import { syncWalPeriodically, type WalSync } from './wal-sync.js';

export type SessionStatus = 'active' | 'finalized' | 'retained';

export interface StoredSession {
  sid: string;
  sessionKey: string;
  status: SessionStatus;
  historyVersion: number;
  overridesText: string;
  cwd: string | null;
  /** How many messages the history holds; the messages stay in the database (`messages()`). */
  messageCount: number;
  queue: QueuedPrompt[];
  queueRevision: number;
  /** How many client_message_ids the session remembers. */
  submitCount: number;
}

export interface RecoveryCounts {
  boots: number;
  lostTurns: number;
  retainedSessions: number;
  expiredRequests: number;
}

/** A unit of work: database writes only, no other effects, because a failed group is re-run one unit at a time. */
export type Work = (w: StoreWriter) => void;

/** The longest a unit waits for company before its group is committed. */
export const GROUP_WAIT_MS = 1;
/** One idle look commits groups that are still filling (measured: groups of ~5 units, not ~40). */
const IDLE_LOOKS_BEFORE_COMMIT = 2;
/** 16 MiB of 4 KiB pages: the WAL's bound, and how many writes share one checkpoint's fsyncs. */
export const WAL_AUTOCHECKPOINT_PAGES = 4000;

interface Queued {
  work: Work;
  resolve: () => void;
  reject: (err: Error) => void;
}

export interface MessageRow {
  role: string;
  content: string;
  tool_calls: string | null;
  tool_call_id: string | null;
}

/** The API shape back from its columns: the tool fields only where a message has them. */
export function toChatMessage(row: MessageRow): ChatMessage {
  const message: ChatMessage = { role: row.role, content: row.content };
  if (row.tool_calls !== null) message.tool_calls = JSON.parse(row.tool_calls) as ChatMessage['tool_calls'];
  if (row.tool_call_id !== null) message.tool_call_id = row.tool_call_id;
  return message;
}

/** A write that failed, in words an operator acts on: a full disk says so. */
export function storageProblem(err: Error): string {
  const code = (err as Error & { code?: string }).code;
  return code === 'SQLITE_FULL' ? `the disk is full: ${err.message}` : err.message;
}

/** The history cache's bound by default: `--history-cache-mib`. */
export const DEFAULT_HISTORY_CACHE_MIB = 64;

export class Store {
  private queue: Queued[] = [];
  /**
   * Writes owed by commits that failed (a turn's undoing after a full disk): each is run at the
   * start of the next transaction, which carries it or fails with it. Order: oldest first.
   */
  private owed: Work[] = [];
  private flushScheduled = false;
  private queuedAtLastLook = 0;
  private idleLooks = 0;
  private firstQueuedMs = 0;
  private readonly writer: StoreWriter;
  private readonly selectSession: Database.Statement<[string]>;
  private readonly selectMessages: Database.Statement<[string, number, number]>;
  private readonly countMessages: Database.Statement<[string]>;
  private readonly selectQueue: Database.Statement<[string]>;
  private readonly selectSubmit: Database.Statement<[string, string]>;
  private readonly countSubmits: Database.Statement<[string]>;
  private readonly selectTurn: Database.Statement<[string]>;
  private readonly flushWhenSettled = (): void => {
    this.idleLooks = this.queue.length > this.queuedAtLastLook ? 0 : this.idleLooks + 1;
    if (this.idleLooks < IDLE_LOOKS_BEFORE_COMMIT && performance.now() - this.firstQueuedMs < GROUP_WAIT_MS) {
      this.queuedAtLastLook = this.queue.length;
      setImmediate(this.flushWhenSettled);
      return;
    }
    this.flushNow();
  };
  private readonly flushNow = (): void => {
    this.flushScheduled = false;
    this.flushQueued();
  };

  private readonly walSync: WalSync;

  /** The sessions' committed histories, so that a turn reads nothing back (history-cache.ts). */
  readonly history: HistoryCache;

  private constructor(readonly db: Database.Database, file: string, historyCacheBytes: number) {
    this.history = new HistoryCache(historyCacheBytes);
    this.writer = new StoreWriter(db);
    this.walSync = syncWalPeriodically(`${file}-wal`);
    this.selectSession = db.prepare(
      'SELECT sid, session_key, status, history_version, overrides, cwd, queue_revision FROM sessions WHERE sid = ?',
    );
    this.selectMessages = db.prepare('SELECT role, content, tool_calls, tool_call_id FROM messages WHERE sid = ? AND seq >= ? AND seq < ? ORDER BY seq');
    // Positions run 0 … n-1 without holes: the last one gives the count from the key, without a scan.
    this.countMessages = db.prepare('SELECT COALESCE(MAX(seq) + 1, 0) AS n FROM messages WHERE sid = ?');
    this.selectQueue = db.prepare(`
      SELECT queue_id AS queueId, text, client_message_id AS clientMessageId, request_id AS requestId, turn_id AS turnId,
             queued_at AS queuedAt, position
      FROM queue WHERE sid = ? ORDER BY position`);
    this.selectTurn = db.prepare('SELECT 1 FROM turns WHERE turn_id = ?');
    this.selectSubmit = db.prepare('SELECT turn_id, queue_id, steered FROM submits WHERE sid = ? AND client_message_id = ?');
    this.countSubmits = db.prepare('SELECT COUNT(*) AS n FROM submits WHERE sid = ?');
  }

  static open(file: string, options: { historyCacheMib?: number } = {}): Store {
    const db = new Database(file);
    // Private like its home; SQLite gives the -wal and -shm files the database file's mode.
    chmodSync(file, 0o600);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('busy_timeout = 5000');
    db.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`);
    migrate(db);
    return new Store(db, file, (options.historyCacheMib ?? DEFAULT_HISTORY_CACHE_MIB) * 1024 * 1024);
  }

  /** Owes a write to the database: done in the next transaction that commits. */
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
      this.db.transaction(() => {
        for (const work of owed) work(this.writer);
        body();
        this.writer.settle();
      })();
    } catch (err) {
      this.writer.committedHistory = [];
      this.writer.discardPending();
      throw err;
    }
    for (const change of this.writer.committedHistory.splice(0)) change(this.history);
    if (owed.length > 0) this.owed = this.owed.slice(owed.length);
  }

  /** Queues a unit of work; resolves once the transaction holding it has committed. */
  commit(work: Work): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ work, resolve, reject });
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        this.queuedAtLastLook = this.queue.length;
        this.idleLooks = 0;
        this.firstQueuedMs = performance.now();
        setImmediate(this.flushWhenSettled);
      }
    });
  }

  /**
   * One transaction now, outside the group queue (which is flushed first so order holds).
   * `durable` commits with synchronous=FULL: the WAL is fsynced before this returns.
   */
  commitNow(work: Work, options: { durable?: boolean } = {}): void {
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
    if (this.queue.length === 0) return;
    const batch = this.queue;
    this.queue = [];
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

  loadSession(sid: string): StoredSession | undefined {
    const row = this.selectSession.get(sid) as
      | { sid: string; session_key: string; status: SessionStatus; history_version: number; overrides: string; cwd: string | null; queue_revision: number }
      | undefined;
    if (row === undefined) return undefined;
    return {
      sid: row.sid,
      sessionKey: row.session_key,
      status: row.status,
      historyVersion: row.history_version,
      overridesText: row.overrides,
      cwd: row.cwd,
      messageCount: (this.countMessages.get(sid) as { n: number }).n,
      queue: this.selectQueue.all(sid) as QueuedPrompt[],
      queueRevision: row.queue_revision,
      submitCount: (this.countSubmits.get(sid) as { n: number }).n,
    };
  }

  /**
   * A session's messages at positions [from, to), from the history cache (bounded in bytes, least
   * recently used out), else from the database, which then fills the cache with the whole history.
   * Everything a session committed is visible: it awaits its commits.
   */
  messages(sid: string, from = 0, to = Number.MAX_SAFE_INTEGER): ChatMessage[] {
    const cached = this.history.read(sid, from, to);
    if (cached !== undefined) return cached;
    const all = (this.selectMessages.all(sid, 0, Number.MAX_SAFE_INTEGER) as MessageRow[]).map(toChatMessage);
    this.history.fill(sid, all);
    return all.slice(from, to);
  }

  /** What the session remembers of an accepted client_message_id (committed ones). */
  submitRecord(sid: string, clientMessageId: string): SubmitRecord | undefined {
    const row = this.selectSubmit.get(sid, clientMessageId) as { turn_id: string; queue_id: string | null; steered: number } | undefined;
    return row === undefined ? undefined : { turnId: row.turn_id, queueId: row.queue_id, steered: row.steered === 1 };
  }

  /** Whether a turn with this id was ever started (a turn.start sent again after a host died). */
  hasTurn(turnId: string): boolean {
    return this.selectTurn.get(turnId) !== undefined;
  }

  /** Sessions with prompts waiting: a new host runs none of them until its parent says `queue resume`. */
  queuedSessions(): string[] {
    return (this.db.prepare('SELECT DISTINCT sid FROM queue ORDER BY sid').all() as { sid: string }[]).map((r) => r.sid);
  }

  /**
   * Durability rule 5, run before this boot starts: whatever a previous host left running died
   * with it. Its running turns become `lost`, its active sessions `retained` (reason `crash`),
   * its open server requests `expired`, and its boot is closed as a crash.
   */
  recoverCrashedBoots(now = Date.now()): RecoveryCounts {
    return this.db.transaction((): RecoveryCounts => {
      const boots = this.db.prepare("UPDATE boots SET ended_at = ?, end_reason = 'crash' WHERE ended_at IS NULL").run(now).changes;
      const lostTurns = this.db
        .prepare("UPDATE turns SET status = 'lost', ended_at = ?, error = 'host died' WHERE status = 'running'")
        .run(now).changes;
      const retainedSessions = this.db
        .prepare("UPDATE sessions SET status = 'retained', retained_reason = 'crash', end_reason = NULL, updated_at = ? WHERE status = 'active'")
        .run(now).changes;
      const expiredRequests = this.db
        .prepare("UPDATE server_requests SET status = 'expired', reason = 'host died', resolved_at = ? WHERE status = 'open'")
        .run(now).changes;
      this.requeueSteeredTexts();
      return { boots, lostTurns, retainedSessions, expiredRequests };
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

  /** Sessions left retained (by a crash or a drain deadline), for `hello.recovered`. */
  retainedSessions(): RecoveredSession[] {
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
  close(): void {
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
