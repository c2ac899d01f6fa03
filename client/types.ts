// The client protocol's results and events as types (PROTOCOL.md §2, AGENT.md §3), for the
// client library's users. What the wire already types is taken from protocol/ and persistence/.
import type { HistoryEntry } from '../protocol/history-entry.js';
import type { ToolCall } from '../protocol/chat.js';
import type { QueueItemView, QueueView } from '../protocol/queue-view.js';
import type { TurnUsage } from '../protocol/usage.js';
import type { EventPayloads as WireEventPayloads } from '../protocol/rpc.js';

export type { ToolCall, TurnUsage };

export type SessionStatus = 'active' | 'finalized' | 'retained';
export type HostState = 'starting' | 'running' | 'restarting' | 'failed';

export interface CreateResult {
  session_id: string;
  session_key: string;
}

export interface ResumeResult {
  session_id: string;
  session_key: string;
  history_version: number;
  status: SessionStatus;
  running: boolean;
  /** The session's open server requests; after a resume with `after_seq` they are also sent again. */
  open_requests: ServerRequestMessage[];
  last_seq: number;
  /** Present when `after_seq` was given: `partial` when events after it were no longer kept. */
  replay?: 'complete' | 'partial';
  first_seq?: number;
  /** The session it was forked from, and at which turn (PROTOCOL.md §2.2). */
  forked_from?: ForkOrigin;
  /** Its agent, the daemon's catalogue's name (AGENT.md §8), and the model chosen for it (null: its agent's own). */
  agent: string;
  model: string | null;
}

/** One agent a session may be made with (AGENT.md §8), as `agents.list` shows it. */
export interface AgentInfo {
  name: string;
  label: string;
  description: string;
  kind: string;
  /** An `openai` agent's models a person may pick. */
  models?: string[];
  members: boolean;
  sandbox: { mode: 'required' | 'off' | 'unused' };
  live_sessions: number;
}

export interface AgentsList {
  /** The agent a new session gets when it names none (for a member: the first open to members when the default is not). */
  default: string;
  digest: string;
  agents: AgentInfo[];
}

/** A session a fork came from, and the turn it was taken at (PROTOCOL.md §2.2). */
export interface ForkOrigin {
  session_id: string;
  turn_id: string | null;
}

export interface ForkResult {
  session_id: string;
  forked_from: { session_id: string; turn_id: string };
}

/** A rewind: the turn the line now ends with (null: none), the turns it superseded, in order. */
export interface RewindResult {
  to_turn_id: string | null;
  superseded: string[];
  history_version: number;
}

export interface SessionSummary {
  session_id: string;
  session_key: string;
  status: SessionStatus;
  running: boolean;
  message_count: number;
  updated_at: string;
  forked_from?: ForkOrigin;
  agent: string;
  model: string | null;
  /** A session's life (PROTOCOL.md §2.3): archived ones are listed only with `archived: true`; pinned ones outlive retention. */
  archived: boolean;
  pinned: boolean;
}

/** What `importSession` made (PROTOCOL.md §2.3). */
export interface ImportResult {
  session_id: string;
  messages: number;
  turns: number;
  /** `renamed`: the store already held the file's turn ids (it came from this store), so its turns have new ones. */
  turn_ids: 'kept' | 'renamed';
  agent: string;
}

/** One message of `session.history`: the tool fields and the turn's model and usage where present. */
export type HistoryMessage = HistoryEntry;

/** What a busy session does with a prompt (PROTOCOL.md §2.1). */
export type OnBusy = 'queue' | 'reject' | 'interrupt' | 'steer';

export interface SubmitOptions {
  /** Default `queue`. */
  on_busy?: OnBusy;
  /** Makes the submit idempotent; the client makes one up when absent and reuses it when it resubmits. */
  client_message_id?: string;
  /** The caller's W3C trace context: the turn's span is its child (PROTOCOL.md §5.8). */
  trace_context?: { traceparent: string; tracestate?: string };
  /** Blocks beyond the text (PROTOCOL.md §2.4): files by `blob` (putBlob's) or with their bytes (`data`, base64). */
  content?: readonly Record<string, unknown>[];
}

/** A stored file (PROTOCOL.md §2.4): how a prompt names it. */
export interface PutBlob {
  blob: string;
  size: number;
  mimeType: string;
}

/** `turn_id` is the turn whose events carry the prompt (for `steered`, the running turn that took it). */
export type SubmitResult =
  | { status: 'streaming'; turn_id: string }
  | { status: 'queued'; queue_id: string; position: number; turn_id: string }
  | { status: 'steered'; turn_id: string }
  | { status: 'duplicate'; state: 'queued' | 'running' | 'steered' | 'done'; turn_id?: string; queue_id?: string };

export type QueueItem = QueueItemView;
export type QueueState = QueueView;
export type QueueAction = 'edit' | 'delete' | 'steer';

/** A control route's result: the host's `result` plus the session's history coordinates. */
export type ControlResult = Record<string, unknown> & { session_key: string; history_version: number; message_count: number };

export type ControlRoute =
  | 'reload.mcp'
  | 'session.save'
  | 'session.compress'
  | 'prompt.submit.truncate'
  | 'slash.model'
  | 'slash.personality'
  | 'slash.prompt'
  | 'slash.compress'
  | 'session.reset'
  | 'session.history.reload'
  | 'slash.retry';

export type LockResult = { status: 'ok'; remaining: string[] } | { status: 'expired' };

export interface HostStatusResult {
  /** `agent`: the agent its host runs (`script`, `openai`, or a module path). */
  supervisor: { pid: number; home: string; started_at: string; agent: string };
  host: { pid: number | null; boot_id: string | null; state: HostState; restarts: number; last_hb_ms: number | null; active_turns: number; last_error: string | null };
  sessions: { active: number; running: number; retained: number; finalized: number };
  /** Where sessions live (a URL without its password), and whether the daemon can read it now. */
  store: { url: string; reachable: boolean; problem?: string };
  /** On a node of several (PROTOCOL.md §6.2): this node's id and every node's URL, heartbeat age and session count. */
  cluster?: { node_id: string; nodes: { node_id: string; url: string | null; heartbeat_age_ms: number; sessions: number }[] };
  /** How the agents' processes are confined (AGENT.md §7); null before the host's first hello. `exposed`: folders given to sessions outside every hidden place. */
  sandbox: { mode: 'required' | 'off' | 'unused'; mechanism: string | null; exposed?: string[] } | null;
  /** Who this client is (PROTOCOL.md §5.6): the home's owner on the unix socket. */
  you: { user: string; admin: boolean };
}

/** What a share lets its user do: read, or drive too. */
export type ShareRole = 'viewer' | 'editor';

/** Every event's payload by its type: the daemon's, and one of this library's own. */
export type EventPayloads = WireEventPayloads & {
  /** From this library, not the daemon: a resume could not replay everything missed (the daemon no longer kept it, or it restarted). */
  'replay.partial': { first_seq: number; missed_after: number };
};

export type EventType = keyof EventPayloads;

export type SessionEvent = {
  [T in EventType]: { type: T; session_id: string; seq: number; payload: EventPayloads[T] };
}[EventType];

export interface ServerRequestMessage {
  jsonrpc: '2.0';
  id: string;
  method: 'clarify.request' | 'approval.request';
  params: { session_id: string } & Record<string, unknown>;
}

export interface ClarifyQuestion {
  id: string;
  question: string;
  choices?: string[];
}

export interface ClarifyRequest {
  id: string;
  session_id: string;
  /** One question… */
  question?: string;
  choices?: string[];
  /** …or a batch. */
  questions?: ClarifyQuestion[];
}

export interface ApprovalRequest {
  id: string;
  session_id: string;
  question: string;
  /** The model agent's tool and arguments (AGENT.md §2). */
  tool?: string;
  arguments?: unknown;
  /** A guest agent's permission options (AGENT.md §6): answer one by its id. */
  options?: PermissionOption[];
}

export interface PermissionOption {
  option_id: string;
  name: string;
  /** `allow_once`, `allow_always`, `reject_once` or `reject_always`. */
  kind: string;
}

/** A guest's permission option chosen by its id (ApprovalRequest.options). */
export interface OptionChoice {
  option_id: string;
}

export interface HandlerContext {
  /** Aborted when the request is withdrawn (answered elsewhere, timed out, interrupted). */
  signal: AbortSignal;
}

/** A single question's answer, a batch's answers by question id, or null to decline. */
export type ClarifyHandler = (request: ClarifyRequest, context: HandlerContext) => Promise<string | Record<string, string> | null> | string | Record<string, string> | null;
/** true approves, false refuses, `{option_id}` picks one of a guest's options, null declines to answer. */
export type ApprovalHandler = (request: ApprovalRequest, context: HandlerContext) => Promise<ApprovalAnswer> | ApprovalAnswer;
export type ApprovalAnswer = boolean | OptionChoice | null;

export type { SessionUsage, TurnLedgerRow, UsageGroup, UsageReport, UsageRow, UsageTotals } from '../protocol/usage.js';
