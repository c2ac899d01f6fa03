// What the host asks of its database, whichever it is (PROTOCOL.md §6.1): SQLite in the home
// (persistence/sqlite/) or PostgreSQL (persistence/postgres/). Nothing in actors/ knows which it
// has. Writes are units of work grouped into one transaction per group; a unit's promise resolves
// once the transaction holding it has committed, and groups commit in the order they gathered, so
// frames that wait on their commits leave in order. Reads see what has committed.
import type { Blobs } from './blobs.js';
import type { BudgetExceeded } from './ledger.js';
import type { ChatMessage } from '../protocol/chat.js';
import { checkedParts } from '../protocol/content.js';
import type { RecoveredSession } from '../protocol/outbound.js';
import type { HistoryCache } from './history-cache.js';
import type { HomeSnapshots } from './home-snapshots.js';
import type { Tombstone } from './session-life.js';
import type { QueuedPrompt, StoreWriter, SubmitRecord } from './store-writer.js';

export type SessionStatus = 'active' | 'finalized' | 'retained';
export type StoredTurnStatus = 'running' | 'completed' | 'interrupted' | 'failed' | 'lost';

/** Where a turn lies in a session's line: its first position, and the one after its last. */
export interface TurnSpan {
  turn_id: string;
  start: number;
  upto: number;
}

/**
 * Whose workspace a session without a folder of its own works in (AGENT.md §7): its owner's
 * (PROTOCOL.md §5.6; none stored: the home's owner). `flat`: stored before workspaces belonged to
 * people, it keeps the folder it had, `<root>/<sid>`.
 */
export interface SessionWorkspace {
  owner: string | null;
  flat: boolean;
}

/** SessionWorkspace's row, in both dialects; no row for an unknown session. */
export const SESSION_WORKSPACE_SQL = `SELECT (SELECT a.user_name FROM session_access a WHERE a.sid = s.sid AND a.role = 'owner') AS owner,
  s.flat_workspace AS flat FROM sessions s WHERE s.sid = $1`;

/** A fork's source, whose guest session the fork's guest may fork (FORK_ORIGIN_SQL). */
export interface ForkOrigin {
  sid: string;
  agent_session_id: string;
}

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
  /** A guest agent's session id (AGENT.md §6); null until a guest made one. */
  agentSessionId: string | null;
  /** Its agent, the catalogue's name (AGENT.md §8); null for a session stored before there were several. */
  agent: string | null;
  /** As a node: this load took the session over from a node that died with it (PROTOCOL.md §6.2). */
  takenOver?: Takeover;
}

/** What a node that died left of a session, recovered in the transaction that took its lease. */
/** A turn lost with its host or node: what ends its span (PROTOCOL.md §5.8), when it had one (`trace`). */
export interface LostTurn {
  turnId: string;
  sid: string;
  /** Its session's agent (AGENT.md §8); null for a session stored before there were several. */
  agent: string | null;
  startedAt: number;
  by: string | null;
  /** As stored at its start (persistence/store-writer.ts, TurnTraceRef); null when it was not traced. */
  trace: string | null;
}

export interface Takeover {
  fromNode: string;
  /** Its running turns, now `lost`. */
  lostTurns: LostTurn[];
  /** Its open server requests, now `expired`. */
  expiredRequests: { id: string; method: string }[];
}

export interface RecoveryCounts {
  boots: number;
  lostTurns: number;
  /** The turns lost, for their spans. */
  lost: LostTurn[];
  retainedSessions: number;
  expiredRequests: number;
}

/** A unit of work: database writes only, no other effects, because a failed group is re-run one unit at a time. */
export type Work = (w: StoreWriter) => void;

/** Whether the database answers, as `status` shows it: a store that went away is named, never fatal. */
export interface StoreHealth {
  /** `sqlite <file>`, or the PostgreSQL URL with its password as `***`. */
  store: string;
  reachable: boolean;
  /** Why the last write or read failed, while the store is unreachable. */
  problem?: string;
}

export interface Store {
  /** SQLite (one machine) or PostgreSQL (nodes may share it): a guest's home follows its session through the latter (AGENT.md §6). */
  readonly kind: 'sqlite' | 'postgres';
  /** A guest's home in the store (persistence/home-snapshots.ts), out of the turns' way. */
  readonly homes: HomeSnapshots;
  /** The files in the same content store (persistence/blobs.ts): what an agent sends back is kept here. */
  readonly blobs: Blobs;
  /** The sessions' committed histories, so that a turn reads nothing back (history-cache.ts). */
  readonly history: HistoryCache;

  /** Queues a unit of work; resolves once the transaction holding it has committed. */
  commit(work: Work): Promise<void>;
  /**
   * One transaction after everything queued before it; `durable`: it survives power loss, not
   * only a crash of the process.
   */
  commitNow(work: Work, options?: { durable?: boolean }): Promise<void>;
  /** Owes a write to the database: done in the next transaction that commits. */
  owe(work: Work): void;

  /** The session as stored; as a node of several, after taking its lease (OwnedElsewhere when another node holds it). */
  loadSession(sid: string): Promise<StoredSession | undefined>;
  /** A session the host will not hold after all (named, but unknown): a node gives back the lease loadSession took. */
  release(sid: string): Promise<void>;
  /**
   * A session's messages at positions [from, to), from the history cache (bounded in bytes, least
   * recently used out), else from the database, which then fills the cache with the whole history.
   */
  messages(sid: string, from?: number, to?: number): Promise<ChatMessage[]>;
  /** What the session remembers of an accepted client_message_id (committed ones). */
  submitRecord(sid: string, clientMessageId: string): Promise<SubmitRecord | undefined>;
  /**
   * Where `turnId` lies in the session's line, or its last ended turn (`turnId` null): where a
   * fork or a rewind cuts. Null when there is none.
   */
  turnSpan(sid: string, turnId: string | null): Promise<TurnSpan | null>;
  /** Where fork `sid`'s guest may take its memory from: its source's guest session, if the source has not moved since the fork. */
  forkOrigin(sid: string): Promise<ForkOrigin | null>;
  /** Whether the session was deleted (PROTOCOL.md §2.3): its id is never used again. */
  isDeleted(sid: string): Promise<boolean>;
  /** Deleted sessions whose files are still to be removed (a crash came between), or deleted since `since` (ms). */
  tombstones(since: number): Promise<Tombstone[]>;
  /** A deleted session's files are gone: its last turns go (FINISH_DELETE_SQL) and its tombstone is marked done. */
  finishDelete(sid: string): Promise<void>;
  /** Whose workspace the session works in when it names no folder (read when a guest is made live). */
  sessionWorkspace(sid: string): Promise<SessionWorkspace>;
  /** The session's own turns from position `seq` on, in order: what a rewind there supersedes. */
  ownTurnsFrom(sid: string, seq: number): Promise<string[]>;
  /**
   * A turn's status as stored, or null when no turn of this id was ever started: whether a
   * turn.start sent again after a host died ran, and what a commit whose answer was lost did.
   */
  turnStatus(turnId: string): Promise<StoredTurnStatus | null>;
  /** The budget `person` is over now (PROTOCOL.md §5.7), read from the ledger every node shares; null: none. */
  overBudget(person: string, now?: number): Promise<BudgetExceeded | null>;
  /** Sessions with prompts waiting: a new host runs none of them until its parent says `queue resume`. */
  queuedSessions(): Promise<string[]>;
  /**
   * Durability rule 5, run before this boot starts: whatever a previous host left running died
   * with it. Its running turns become `lost`, its active sessions `retained` (reason `crash`),
   * its open server requests `expired`, and its boot is closed as a crash.
   */
  recoverCrashedBoots(now?: number): Promise<RecoveryCounts>;
  /** Sessions left retained (by a crash or a drain deadline), for `hello.recovered`. */
  retainedSessions(): Promise<RecoveredSession[]>;

  health(): StoreHealth;
  /** Commits what is queued, then lets the database go. */
  close(): Promise<void>;
}

/**
 * A write refused because this node no longer holds the session's lease (PROTOCOL.md §6.2): another
 * node took it. The session is that node's now; this one must forget it and write nothing more.
 */
/** How long a node's lease lasts unless renewed (`--lease-secs`, PROTOCOL.md §6.2). */
export const DEFAULT_LEASE_SECS = 10;

/**
 * The longest a node waits at start for its own lock, which an earlier start of it may hold
 * until that one's heartbeat is a lease old; the rest covers a transaction left open, which the
 * server ends after 5 s (connection.ts).
 */
export function nodeLockWaitMs(leaseSecs: number): number {
  return leaseSecs * 1000 + 6_000;
}

export class LeaseLost extends Error {
  constructor(readonly sids: readonly string[]) {
    super(`this node no longer holds the lease of ${sids.join(', ')}: another node took the session`);
  }
}

/** A session that another live node owns: this node may not take it until that node's lease expires. */
export class OwnedElsewhere extends Error {
  constructor(
    readonly sid: string,
    readonly owner: string,
  ) {
    super(`session ${sid} is owned by node ${owner} until its lease expires (a daemon sends its clients' methods there; this host does not)`);
  }
}

/** The history cache's bound by default: `--history-cache-mib`. */
export const DEFAULT_HISTORY_CACHE_MIB = 64;

/** A write that failed, in words an operator acts on: a full disk says so. */
export function storageProblem(err: Error): string {
  const code = (err as Error & { code?: string }).code;
  if (code === 'SQLITE_FULL' || code === '53100') return `the disk is full: ${err.message}`;
  return err.message;
}

/** A session's row with its counts, as both stores select it (SESSION_COLUMNS in each dialect). */
export interface SessionRowWithCounts {
  sid: string;
  session_key: string;
  status: SessionStatus;
  history_version: number;
  overrides: string;
  cwd: string | null;
  queue_revision: number;
  agent_session_id: string | null;
  agent: string | null;
  message_count: number;
  submit_count: number;
}

export function toStoredSession(row: SessionRowWithCounts, queue: QueuedPrompt[]): StoredSession {
  return {
    sid: row.sid,
    sessionKey: row.session_key,
    status: row.status,
    historyVersion: row.history_version,
    overridesText: row.overrides,
    cwd: row.cwd,
    messageCount: row.message_count,
    queue,
    queueRevision: row.queue_revision,
    submitCount: row.submit_count,
    agentSessionId: row.agent_session_id,
    agent: row.agent,
  };
}

/** A message's columns as both stores keep them. */
export interface MessageRow {
  role: string;
  content: string;
  tool_calls: string | null;
  tool_call_id: string | null;
  parts: string | null;
}

/** MessageRow's columns, of a line's messages `m`. */
export const MESSAGE_COLUMNS = 'm.role, m.content, m.tool_calls, m.tool_call_id, m.parts';

/** The API shape back from its columns: the tool fields only where a message has them. */
export function toChatMessage(row: MessageRow): ChatMessage {
  const message: ChatMessage = { role: row.role, content: row.content };
  if (row.tool_calls !== null) message.tool_calls = JSON.parse(row.tool_calls) as ChatMessage['tool_calls'];
  if (row.tool_call_id !== null) message.tool_call_id = row.tool_call_id;
  if (row.parts !== null) message.parts = checkedParts(JSON.parse(row.parts));
  return message;
}
