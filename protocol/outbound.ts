// Host → parent frames (PROTOCOL.md §1.2). The writer adds `host_ns` to each.
import type { Nanos } from './nanos.js';
import type { QueueItemView, QueueView } from './queue-view.js';
import type { TurnUsage } from './usage.js';
import type { RpcMessage, RpcResponse } from './rpc.js';

/** `auth`, `upstream` and `stalled` come from the model agent (AGENT.md §4). */
export type TurnErrorReason = 'invalid' | 'busy' | 'shutting_down' | 'exception' | 'crash' | 'auth' | 'upstream' | 'stalled' | 'storage' | 'lease_lost' | 'node_lost' | 'resources' | 'budget' | 'agent';

/** Which budget a turn's start was refused by (PROTOCOL.md §5.7): 4029's `data`. */
export interface BudgetRefusal {
  budget: 'tokens_per_day' | 'turns_per_day';
  limit: number;
  used: number;
  /** The next UTC midnight, ISO 8601. */
  resets_at: string;
}

export type RetainReason = 'crash' | 'drain_deadline';

export interface RecoveredSession {
  sid: string;
  session_key: string;
  reason: RetainReason;
}

/** A session's history coordinates, carried by turn.end and control.ack. */
export interface HistoryMeta {
  session_key: string;
  history_version: number;
  message_count: number;
}

export interface SessionInfo {
  agent: string;
  model: string | null;
  personality: string | null;
  system_prompt: string | null;
  cwd: string | null;
  turns: number;
}

export type DebugTopic = 'sessions' | 'requests' | 'turns' | 'actors' | 'stats';
export const DEBUG_TOPICS: readonly DebugTopic[] = ['sessions', 'requests', 'turns', 'actors', 'stats'];

/**
 * A change of a session's queue, for a parent started with --queue-deltas instead of the
 * `session.queue` events it stands for: `append` an item at the tail, `shift` the head out, or
 * `reset` to these items. A host's first change of a session is always a reset.
 */
export type QueueDeltaFrame = { type: 'queue.delta'; sid: string; revision: number } & (
  | { op: 'append'; item: QueueItemView }
  | { op: 'shift' }
  | { op: 'reset'; items: QueueItemView[] }
);

export type SubmitState = 'queued' | 'running' | 'steered' | 'done';

export type HelloFrame = {
  type: 'hello';
  host_pid: number;
  boot_id: string;
  build_sha: string;
  cwd: string;
  home: string;
  protocol: 1;
  workers: number;
  heartbeat_secs: number;
  recovered: RecoveredSession[];
  /** Sessions with queued prompts: none runs until the parent sends `queue resume` for it. */
  queued: string[];
  /** How the agent's processes are confined (AGENT.md §7). */
  sandbox?: SandboxStatus;
};

/** What `status` says of the sandbox (AGENT.md §7): `unused` when the agent starts no process. */
export interface SandboxStatus {
  mode: 'required' | 'off' | 'unused';
  /** `bubblewrap 0.8.0` while the sandbox is in use; null otherwise. */
  mechanism: string | null;
  /** In `status` (the daemon's): sessions' folders outside every hidden place, which every agent can read (AGENT.md §7). */
  exposed?: string[];
}

export type HeartbeatFrame = {
  type: 'hb';
  active_turns: number;
  queued_turns: number;
  sessions: number;
  progress_counter: number;
  rss_mb: number;
  loop_lag_ms: number;
  /** Why the host cannot write its store now (the server is gone, the node's lock is taken); absent when it can. */
  store_problem?: string;
};

export type TurnEndFrame = {
  type: 'turn.end';
  sid: string;
  request_id: string;
  turn_id?: string;
  queue_id?: string;
  interrupted: boolean;
  ended_ns: Nanos;
  usage?: TurnUsage;
  /** `length` when the model's token limit cut the reply (AGENT.md §4). */
  finish_reason?: 'length';
} & Partial<HistoryMeta & { session_info: SessionInfo; session_info_emitted: true }>;

export type ShutdownReport = {
  reason: string;
  finalized: string[];
  retained: string[];
  elapsed_ms: number;
  /** How long the drain collected acks. */
  drain_ms: number;
  /** How late the drain deadline was acted on; null when every session drained before it. */
  deadline_overshoot_ms: number | null;
  /** From the end of the drain to the flush's commit: the sessions settling and the one transaction. */
  flush_ms: number;
  /** Set when the flush transaction failed: nothing of it was written. */
  error?: string;
};

export type HostOutFrame =
  | HelloFrame
  | HeartbeatFrame
  | { type: 'orphan'; old_ppid: number; ppid: number }
  | { type: 'rpc'; sid: string; message: RpcMessage }
  | QueueDeltaFrame
  | { type: 'turn.started'; sid: string; request_id: string; turn_id: string; queue_id?: string; schedule_id?: string; started_ns: Nanos }
  | TurnEndFrame
  | { type: 'turn.error'; sid: string | null; request_id: string | null; turn_id?: string; queue_id?: string; message: string; reason: TurnErrorReason; /** busy because another node owns the session: that node */ node_id?: string; /** refused by a budget */ budget?: BudgetRefusal }
  /** Written only for a turn.start that carried on_busy: the prompt will run (once a worker is free). */
  | { type: 'turn.accepted'; sid: string; request_id: string; turn_id: string }
  | { type: 'turn.queued'; sid: string; request_id: string; queue_id: string; position: number; turn_id: string }
  | { type: 'turn.steered'; sid: string; request_id: string; turn_id: string }
  | { type: 'turn.duplicate'; sid: string; request_id: string; state: SubmitState; turn_id?: string; queue_id?: string }
  | ({ type: 'queue.ack'; sid: string; request_id: string } & QueueView)
  | { type: 'queue.error'; sid: string | null; request_id: string | null; message: string; code: number }
  | { type: 'interrupt.ack'; sid: string; request_id: string; applied: boolean; applied_ns?: Nanos; reason?: 'not_current' }
  | { type: 'respond.ack'; sid: string; request_id: string; response: RpcResponse }
  | { type: 'respond.error'; sid: string | null; request_id: string | null; message: string }
  | ({ type: 'control.ack'; sid: string; request_id: string; route_name: string; result: unknown } & HistoryMeta)
  | { type: 'control.error'; sid: string | null; request_id: string | null; message: string }
  | { type: 'reload_mcp.ack'; sid: string; request_id: string; response: RpcResponse }
  | ({ type: 'shutdown.ack'; request_id: string } & ShutdownReport)
  | { type: 'debug.result'; request_id: string; what: DebugTopic; result: unknown }
  /** The answer to an `agents` frame (AGENT.md §8): the catalogue as the host now has it. */
  | { type: 'agents.result'; request_id: string; result: unknown }
  /** An `agents` frame refused: a reload of a file that does not validate (the old catalogue stays), said as exit 78 says it. */
  | { type: 'agents.error'; request_id: string | null; message: string }
  | { type: 'error'; request_id: string | null; message: string };

export type HostOutType = HostOutFrame['type'];
