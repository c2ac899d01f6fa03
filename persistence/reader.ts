// What the CLI, the daemon and the REPL read of a home's sessions, whichever store holds them
// (PROTOCOL.md §3, §6.1). Nothing here ever writes.
import { decodeOr } from './codec.js';
import { OWNER } from './people.js';
import type { ToolCall } from '../protocol/chat.js';
import { checkedParts } from '../protocol/content.js';
import type { ExportLine } from './session-export.js';
import type { HistoryEntry } from '../protocol/history-entry.js';
import type { SessionStatus, StoredTurnStatus } from './store.js';
import { mergeSuperseded, type HistoryRow, type SupersededRow } from './history-rows.js';
import { MESSAGE_COUNT_SQL } from './session-line.js';

/** One row of `turnhost sessions --json` (PROTOCOL.md §3). */
export interface SessionSummary {
  session_id: string;
  session_key: string;
  status: SessionStatus;
  end_reason: string | null;
  retained_reason: string | null;
  message_count: number;
  history_version: number;
  updated_at: string;
  /** Its agent (AGENT.md §8); null for a session stored before there were several (it takes the default at its next turn). */
  agent: string | null;
  /** Its model when one was chosen for it (`session.create {model}`, `slash.model`); null: its agent's own. */
  model: string | null;
  /** Out of the lists unless asked (PROTOCOL.md §2.3); a prompt brings it back. */
  archived: boolean;
  /** Kept through retention (PROTOCOL.md §2.3). */
  pinned: boolean;
}

/** A summary with what a list names the session by (PROTOCOL.md §5.5): its first message, when it is a prompt; and where it was forked from. */
export interface ListedSession extends SessionSummary {
  first_prompt: string | null;
  forked_from: ForkOrigin | null;
}

/** A session this one was forked from, at a turn (PROTOCOL.md §2.2). */
export interface ForkOrigin {
  session_id: string;
  turn_id: string | null;
}

/** How much of a history to read: its last `limit` messages; `all`: with the superseded turns too. */
export interface HistoryOptions {
  limit?: number;
  all?: boolean;
}

/** What a history shows of a turn on its last message: its usage and its time. */
export interface TurnUsageRow {
  by_user: string | null;
  started_at: number;
  ended_at: number | null;
  model: string | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  cached_tokens: number | null;
  reasoning_tokens: number | null;
  model_calls: number | null;
}

export const TURN_USAGE_COLUMNS = 'by_user, started_at, ended_at, model, prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, model_calls';

export const SESSION_STATUSES: readonly SessionStatus[] = ['active', 'finalized', 'retained'];

/** A session's columns for its summary; a branch of a session (PROTOCOL.md §2.2) is never one. */
export const SUMMARY_COLUMNS = `sid, session_key, status, end_reason, retained_reason, history_version, updated_at, forked_from_sid, forked_from_turn, agent, overrides, archived_at, pinned,
  ${MESSAGE_COUNT_SQL} AS message_count,
  (SELECT content FROM messages WHERE messages.sid = CASE WHEN COALESCE(sessions.parent_upto, 0) > 0 THEN sessions.parent_sid ELSE sessions.sid END
     AND messages.seq = 0 AND messages.role = 'user') AS first_prompt`;
export const NOT_A_BRANCH = 'branch_of IS NULL';

export const SUBMITTED_SQL = 'SELECT 1 AS taken FROM submits WHERE sid = $1 AND client_message_id = $2';
const TURN_COLUMNS = 'turn_id, sid, status, error, started_at, ended_at';
export const TURN_SQL = `SELECT ${TURN_COLUMNS} FROM turns WHERE turn_id = $1`;
/** A session's own turns (not a fork's inherited ones, nor a rewound line's), oldest first. */
export const SESSION_TURNS_SQL = `SELECT ${TURN_COLUMNS} FROM turns WHERE sid = $1 AND superseded_at IS NULL ORDER BY started_at, turn_id`;

/** One turn as stored: how it ended (`running` while it runs; `lost` when its host died under it), and why it failed. */
export interface StoredTurn {
  turn_id: string;
  sid: string;
  status: StoredTurnStatus;
  error: string | null;
  started_at: number;
  ended_at: number | null;
}
/** The sessions forked from `$1`. */
export const FORKS_SQL = `SELECT sid, forked_from_turn FROM sessions WHERE forked_from_sid = $1 AND ${NOT_A_BRANCH} ORDER BY created_at, sid`;

/** A summary as stored: the sid and the time in their column form. */
export type SessionRow = Omit<ListedSession, 'session_id' | 'updated_at' | 'forked_from' | 'model' | 'archived' | 'pinned'> & {
  sid: string;
  updated_at: number;
  forked_from_sid: string | null;
  forked_from_turn: string | null;
  overrides: string;
  archived_at: number | string | null;
  pinned: number;
};

/** A node of the cluster, as its heartbeat left it (PROTOCOL.md §6.2). */
export interface ClusterNode {
  node_id: string;
  url: string | null;
  heartbeat_age_ms: number;
  sessions: number;
  /** Its catalogue of agents' digest (AGENT.md §8): nodes that differ read different agent configs. */
  catalogue: string | null;
}

/** Another node, as a forwarding node reaches it. */
export interface PeerNode {
  node_id: string;
  /** Its edge (`--advertise`); null when it has none, and cannot be forwarded to. */
  url: string | null;
}

/** A session's lease as the store has it, for a node that does not run the session (PROTOCOL.md §6.2). */
export interface LeaseView {
  node_id: string;
  epoch: number;
  /** 0 once it has expired, as the database's clock says. */
  expires_in_ms: number;
  /** The turn the store has as running (on that node, or lost with it). */
  running_turn: string | null;
}

/** A read-only query's answer, for the REPL's `.sql`. */
export interface QueryResult {
  columns: string[];
  rows: Record<string, unknown>[];
}

/** Reader.sessionFolders, in both dialects. */
export const SESSION_FOLDERS_SQL = 'SELECT DISTINCT cwd FROM sessions WHERE cwd IS NOT NULL ORDER BY cwd';

export interface Reader {
  /** `sqlite <file>`, or the PostgreSQL URL with its password as `***`. */
  readonly description: string;
  /** The sessions, least recently active first; archived ones only with `archived` (then with the others). */
  sessions(status?: SessionStatus, archived?: boolean): Promise<ListedSession[]>;
  /** Whether the session was deleted (PROTOCOL.md §2.3): its id is never used again. */
  isDeleted(sid: string): Promise<boolean>;
  /** The session as a file's lines (PROTOCOL.md §2.3, session-export.ts); undefined for an unknown session. */
  exportSession(sid: string): Promise<ExportLine[] | undefined>;
  session(sid: string): Promise<SessionSummary | undefined>;
  /** Sessions with prompts waiting in their queue: how many, and since when (the oldest). */
  queues(): Promise<{ session_id: string; queued: number; oldest: string }[]>;
  statusCounts(): Promise<Record<SessionStatus, number>>;
  /** The session's messages, oldest first (the last `limit` when given; `all`: with the superseded ones); undefined for an unknown session. */
  history(sid: string, options?: HistoryOptions): Promise<HistoryEntry[] | undefined>;
  /** A turn, started (a queued prompt has none yet); undefined when there is no such turn. */
  turn(turnId: string): Promise<StoredTurn | undefined>;
  /** The session's turns on its line, oldest first. */
  turns(sid: string): Promise<StoredTurn[]>;
  /** Whether the session has taken a submit with this client_message_id (a retry or an edit sent again must not rewind twice). */
  submitted(sid: string, clientMessageId: string): Promise<boolean>;
  /** Where the session was forked from, and the sessions forked from it (PROTOCOL.md §2.2). */
  forks(sid: string): Promise<{ forked_from: ForkOrigin | null; forks: ForkOrigin[] } | undefined>;
  /** The folders sessions were created to work in (their `cwd`), each once. */
  sessionFolders(): Promise<string[]>;
  /** The nodes sharing the database; none on SQLite. */
  nodes(): Promise<ClusterNode[]>;
  /** The live node other than `self` that holds the session's lease; null when none does (always on SQLite). */
  liveOwner(sid: string, self: string): Promise<PeerNode | null>;
  /** The session's lease, whoever holds it, live or expired; null when none does (always on SQLite). */
  lease(sid: string): Promise<LeaseView | null>;
  /** What the nodes show each other (PROTOCOL.md §6.2); null on SQLite. */
  clusterSecret(): Promise<string | null>;
  /** A query that only reads; one that would write is refused. */
  query(sql: string): Promise<QueryResult>;
  close(): Promise<void>;
}

/** Each turn's model and usage go on its last assistant message; `usageOf` reads a turn's. */
/**
 * What a history shows of its turns (from their rows): on each prompt, who submitted it (the home's
 * owner when the row does not say); on each turn's last assistant message, its model, usage and time.
 */
export async function withTurnUsage(entries: HistoryEntry[], usageOf: (turnIds: string[]) => Promise<Map<string, TurnUsageRow>>): Promise<HistoryEntry[]> {
  const lastAssistant = new Map<string, HistoryEntry>();
  const prompts: HistoryEntry[] = [];
  for (const entry of entries) {
    if (entry.turn_id === null) continue;
    if (entry.role === 'assistant') lastAssistant.set(entry.turn_id, entry);
    else if (entry.role === 'user') prompts.push(entry);
  }
  const turnIds = new Set([...lastAssistant.keys(), ...prompts.map((entry) => entry.turn_id!)]);
  if (turnIds.size === 0) return entries;
  const usage = await usageOf([...turnIds]);
  for (const entry of prompts) entry.by = usage.get(entry.turn_id!)?.by_user ?? OWNER;
  for (const [turnId, entry] of lastAssistant) {
    const turn = usage.get(turnId);
    if (turn?.model) entry.model = turn.model;
    if (turn?.model_calls !== null && turn?.model_calls !== undefined) {
      entry.usage = {
        prompt_tokens: Number(turn.prompt_tokens ?? 0),
        completion_tokens: Number(turn.completion_tokens ?? 0),
        calls: turn.model_calls,
        ...(turn.cached_tokens === null ? {} : { cached_tokens: Number(turn.cached_tokens) }),
        ...(turn.reasoning_tokens === null ? {} : { reasoning_tokens: Number(turn.reasoning_tokens) }),
      };
    }
    if (turn?.ended_at !== null && turn?.ended_at !== undefined) entry.duration_ms = turn.ended_at - turn.started_at;
  }
  return entries;
}

export function toHistoryEntry(row: HistoryRow): HistoryEntry {
  const entry: HistoryEntry = { seq: row.seq, role: row.role, content: row.content, turn_id: row.turn_id, at: new Date(row.created_at).toISOString() };
  if (row.tool_calls !== null) entry.tool_calls = JSON.parse(row.tool_calls) as ToolCall[];
  if (row.tool_call_id !== null) entry.tool_call_id = row.tool_call_id;
  if (row.parts !== null) entry.parts = checkedParts(JSON.parse(row.parts));
  return entry;
}

/** The summary (`sessions --json`, PROTOCOL.md §3: exactly these keys), and the first prompt and the fork's origin beside it. */
export function toListed(row: SessionRow): ListedSession {
  return { ...toSummary(row), first_prompt: row.first_prompt ?? null, forked_from: forkOrigin(row) };
}

export function forkOrigin(row: Pick<SessionRow, 'forked_from_sid' | 'forked_from_turn'>): ForkOrigin | null {
  return row.forked_from_sid === null ? null : { session_id: row.forked_from_sid, turn_id: row.forked_from_turn };
}

/**
 * With `all`: the superseded rows, each branch's together, just before the live message at the
 * position its path left the line (the path that was, then the path that is).
 */
export function withSuperseded(live: HistoryEntry[], superseded: readonly SupersededRow[]): HistoryEntry[] {
  const branches = new Map<string, HistoryEntry[]>();
  for (const row of superseded) {
    const entry: HistoryEntry = { ...toHistoryEntry(row), superseded: true };
    if (row.superseded_at !== null) entry.superseded_at = new Date(Number(row.superseded_at)).toISOString();
    if (row.superseded_by !== null || row.superseded_at !== null) entry.superseded_by = row.superseded_by;
    branches.set(row.branch, [...(branches.get(row.branch) ?? []), entry]);
  }
  return mergeSuperseded(live, [...branches.values()], (entry) => entry.superseded === true);
}

export function toSummary(row: SessionRow): SessionSummary {
  return {
    session_id: row.sid,
    session_key: row.session_key,
    status: row.status,
    end_reason: row.end_reason,
    retained_reason: row.retained_reason,
    message_count: row.message_count,
    history_version: row.history_version,
    updated_at: new Date(row.updated_at).toISOString(),
    agent: row.agent,
    model: decodeOr<{ model?: string }>(row.overrides, {}).model ?? null,
    archived: row.archived_at !== null,
    pinned: Number(row.pinned) === 1,
  };
}
