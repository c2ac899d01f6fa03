// Messages of the supervisor process's actors: the supervisor (the host child and everything
// pending on it), the gateway (client connections and who is attached to which session) and one
// client actor per connection.
import type { ContentBlock } from '../../protocol/content.js';
import type { TraceContext } from '../../protocol/trace-context.js';
import type { QueueDeltaFrame, RecoveredSession, SandboxStatus } from '../../protocol/outbound.js';
import type { EventPayloads, EventType, RequestId, RpcErrorObject } from '../../protocol/rpc.js';
import type { UnknownRecord } from '../../protocol/fields.js';
import type { OnBusy, QueueOp } from '../../protocol/frames.js';
import type { HostHandle } from './host-child.js';
import type { Ref } from '../runtime.js';

export type HostPhase = 'starting' | 'running' | 'restarting' | 'failed' | 'stopping' | 'stopped';

/** The client-visible host state (`host.status`): stopping shows as its last running state. */
export type HostStateName = 'starting' | 'running' | 'restarting' | 'failed';

/** What a client asks of the host, through the supervisor. */
export type HostCall =
  | { op: 'turn'; sid: string; text: string; content?: ContentBlock[]; cwd?: string; onBusy: OnBusy; clientMessageId?: string; by?: string; traceContext?: TraceContext }
  | { op: 'interrupt'; sid: string; turnId?: string; keepQueue: boolean }
  | { op: 'queue'; sid: string; queueOp: QueueOp; queueId?: string; text?: string }
  | { op: 'control'; sid: string; route: string; params: UnknownRecord }
  | { op: 'create'; sid: string; cwd?: string; agent?: string; model?: string }
  | { op: 'respond'; sid: string; params: UnknownRecord }
  | { op: 'debug'; what: string }
  | { op: 'delete'; sid: string; interrupt: boolean; by: string }
  | { op: 'agents'; reload: false }
  | { op: 'agents'; reload: true; env: Record<string, string> };

export type CallReply = { ok: true; value: unknown } | { ok: false; error: RpcErrorObject };

export interface HostStatus {
  supervisor: { pid: number; home: string; started_at: string; agent: string };
  /** How the agent's processes are confined, as the running host said (AGENT.md §7); null until a host said hello. */
  sandbox: SandboxStatus | null;
  host: {
    pid: number | null;
    boot_id: string | null;
    state: HostStateName;
    restarts: number;
    last_hb_ms: number | null;
    active_turns: number;
    last_error: string | null;
    heartbeat_secs: number | null;
    rss_mb: number | null;
    loop_lag_ms: number | null;
    /** The host's last heartbeat said it cannot write its store, and why. */
    store_problem: string | null;
  };
  running_sids: string[];
  /** The running turn's id, by session. */
  running_turns: Record<string, string>;
}

export interface StopReport {
  finalized: number;
  retained: number;
}

/** A frame from the host, parsed: the supervisor sees every frame except client events. */
export type HostFrameIn = Record<string, unknown> & { type: string };

export type SupervisorMsg =
  | { kind: 'spawn' }
  /** The frames of one read from the host, in order. */
  | { kind: 'host-frames'; child: HostHandle; frames: HostFrameIn[] }
  | { kind: 'host-exit'; child: HostHandle; code: number | null; signal: NodeJS.Signals | null }
  | { kind: 'hello-timeout'; child: HostHandle }
  | { kind: 'watchdog' }
  | { kind: 'reply-timeout'; requestId: string }
  | { kind: 'parked-timeout'; id: number }
  | { kind: 'kill-deadline'; child: HostHandle }
  | { kind: 'call'; call: HostCall; replyTo: Ref<CallReply> }
  /** A client attached to a session (create, resume, submit): a queue that waits for one may run now. */
  | { kind: 'attached'; sid: string }
  /** A session no live node holds, which a client follows here: the host takes it (and runs its queue). */
  | { kind: 'take-over'; sid: string }
  | { kind: 'status'; replyTo: Ref<HostStatus> }
  | { kind: 'restart'; replyTo: Ref<{ state: HostStateName }> }
  | { kind: 'stop'; waitSec: number; replyTo?: Ref<StopReport> };

/** Where a client connection's output goes: whole lines (text, or bytes), one write each. */
export interface ClientSink {
  readonly id: number;
  write(line: string | Buffer): void;
}

/** What the gateway knows of a session: its last event's seq and its open server requests. */
export interface SessionPeek {
  last_seq: number;
  open_requests: unknown[];
}

export type GatewayMsg =
  | { kind: 'client-open'; sink: ClientSink }
  | { kind: 'peek'; sid: string; replyTo: Ref<SessionPeek> }
  | { kind: 'count-open-requests'; replyTo: Ref<number> }
  | { kind: 'client-closed'; clientId: number }
  | { kind: 'attach'; sid: string; clientId: number; viewer?: boolean }
  /**
   * A JSON-RPC message from the host for a session's clients, as JSON text; for an event, the
   * text of its params instead, so the gateway can number it (`params.seq`).
   */
  | { kind: 'session-message'; sid: string; json: string; eventParams?: string; request?: { id: string; method: string }; cancelled?: string }
  /** session.resume: attach, answer, replay what the client missed after `afterSeq`, then re-send the open requests. */
  | { kind: 'resume'; sid: string; clientId: number; rpcId: RequestId; afterSeq: number | null; result: Record<string, unknown>; viewer?: boolean }
  | { kind: 'event'; sid: string; type: EventType; payload: EventPayloads[EventType] }
  | { kind: 'request-session'; requestId: string; replyTo: Ref<string | null> }
  | { kind: 'request-closed'; requestId: string }
  | { kind: 'host-ready'; recovered: RecoveredSession[] }
  | { kind: 'turn-ended'; sid: string }
  /** The session was deleted (its last event, session.deleted, delivered before): its ring and its clients' attachment go. */
  | { kind: 'session-deleted'; sid: string }
  /** A change of a session's queue, from a host started with --queue-deltas. */
  | { kind: 'queue-delta'; delta: QueueDeltaFrame }
  /** A host said hello: the queues copied from the one before are gone. */
  | { kind: 'host-hello' }
  /** What one read from the host holds for the clients, in order: one actor message, not one per line. */
  | { kind: 'batch'; messages: GatewayMsg[] };

export type ClientMsg = { kind: 'lines'; texts: string[] } | { kind: 'closed' };
