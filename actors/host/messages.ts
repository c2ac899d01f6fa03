// Every message the host process's actors exchange. Requests carry a typed `replyTo`.
import type { TurnResult } from '../../agents/agent.js';
import type { Takeover, Work } from '../../persistence/store.js';
import type { ChatMessage } from '../../protocol/chat.js';
import type { ControlFrame, HostInFrame, InterruptFrame, QueueFrame, ReloadMcpFrame, RespondFrame, SessionCreateFrame, SessionDeleteFrame, TurnStartFrame } from '../../protocol/frames.js';
import type { RetainReason, ShutdownReport } from '../../protocol/outbound.js';
import type { TurnUsage } from '../../protocol/usage.js';
import type { CancelReason, ServerRequestMethod } from '../../protocol/rpc.js';
import type { ControlRequest } from './routes.js';
import type { Ref } from '../runtime.js';

export type ShutdownReason = 'sigterm' | 'stdin_closed' | 'orphan' | 'shutdown';

/** A turn waiting for, or holding, one of the host's `workers` slots. */
export interface TurnTicket {
  id: number;
  /** Whose turn it is (PROTOCOL.md §5.7): the fair share is by person. */
  person: string;
  sid: string;
  session: Ref<SessionMsg>;
}

export type TurnOutcome = 'completed' | 'interrupted' | 'failed';

/** What the host keeps of a finished turn (debug `turns`, the REPL). */
export interface FinishedTurn {
  sid: string;
  turnId: string;
  requestId: string;
  outcome: TurnOutcome;
  startedAt: number;
  endedAt: number;
  model?: string;
  usage?: TurnUsage;
}

export interface HostStats {
  workers: number;
  activeTurns: number;
  queuedTurns: number;
  sessions: number;
  progressCounter: number;
  shuttingDown: boolean;
  recentTurns: FinishedTurn[];
}

export type HostMsg =
  | { kind: 'frame'; frame: HostInFrame }
  | { kind: 'admit'; ticket: TurnTicket }
  | { kind: 'withdraw'; ticketId: number }
  | { kind: 'release'; ticketId: number; finished?: FinishedTurn }
  | { kind: 'session-count'; delta: number }
  | { kind: 'heartbeat' }
  | { kind: 'shutdown'; reason: ShutdownReason; waitSec: number; requestId?: string; replyTo?: Ref<ShutdownReport> }
  | { kind: 'shutdown-done'; report: ShutdownReport }
  | { kind: 'stats'; replyTo: Ref<HostStats> };

/** Frames that name a session, routed by sid through its shard. */
export type SessionFrame = TurnStartFrame | InterruptFrame | RespondFrame | ReloadMcpFrame | ControlFrame | QueueFrame | SessionCreateFrame | SessionDeleteFrame;

/**
 * A turn.start's place in the arrival order, given by the host as the frame arrives: the ticket
 * it waits under for a worker (the waiting are admitted by id), and whether the host already
 * reserved a free worker for it. A session may take a while to load (its store's read), and
 * turns must still be admitted in the order their frames came.
 */
export interface ArrivalTicket {
  id: number;
  reserved: boolean;
}

/** A frame on its way to its session; a turn.start carries its arrival ticket. */
export interface FrameMsg {
  kind: 'frame';
  frame: SessionFrame;
  control?: ControlRequest;
  ticket?: ArrivalTicket;
}

export type ShardMsg =
  | FrameMsg
  | { kind: 'list'; replyTo: Ref<SessionHandle[]> }
  | { kind: 'describe'; replyTo: Ref<unknown[]> };

export interface SessionHandle {
  sid: string;
  ref: Ref<SessionMsg>;
}

/**
 * A session's answer to `drain` (sent once it is idle: the ack finalizes it) or to `retain`:
 * the rows it adds to the shutdown's one flush transaction. `skipped`: its latch was spent already.
 */
export interface Settled {
  kind: 'settled';
  answering: 'drain' | 'retain';
  sid: string;
  outcome: 'finalized' | 'retained' | 'skipped';
  work: Work | null;
}

/** A session's description for `debug sessions` and the REPL. */
export interface SessionDescription {
  sid: string;
  session_key: string;
  phase: 'idle' | 'waiting' | 'running';
  lifecycle: 'open' | 'finalized' | 'retained';
  turn_id: string | null;
  message_count: number;
  history_version: number;
  open_requests: OpenRequestDescription[];
  idle_ms: number;
  /** Prompts waiting in the queue, and why none starts: `paused` (waits for a client), `retry` (its head failed to start), or null. */
  queued: number;
  queue_held: 'paused' | 'retry' | null;
}

export interface OpenRequestDescription {
  id: string;
  sid: string;
  method: ServerRequestMethod;
  age_ms: number;
}

export type SessionMsg =
  | FrameMsg
  | { kind: 'slot'; ticketId: number }
  | { kind: 'admission-refused'; ticketId: number }
  | { kind: 'turn-done'; turnId: string; result: TurnResult | null; error: Error | null }
  | { kind: 'save-tail'; turnId: string; replyTo: Ref<string | null> }
  | { kind: 'keep-agent-session'; turnId: string; agentSessionId: string; replyTo: Ref<string | null> }
  | { kind: 'compress-history'; turnId: string; summary: ChatMessage[]; replyTo: Ref<string | null> }
  | { kind: 'activity-tick'; turnId: string }
  /** A queue held after its head failed to start may go on (queue-retry.ts). */
  | { kind: 'queue-retry' }
  /** Loaded from the store by taking it over from a node that died: its clients hear what died with that node. */
  | { kind: 'taken-over'; takeover: Takeover }
  | { kind: 'open-request'; method: ServerRequestMethod; params: Record<string, unknown>; timeoutMs: number; turnId: string; replyTo: Ref<unknown> }
  | { kind: 'request-closed'; id: string }
  | { kind: 'drain'; endReason: string; replyTo: Ref<Settled> }
  | { kind: 'retain'; reason: RetainReason; replyTo: Ref<Settled> }
  | { kind: 'describe'; replyTo: Ref<SessionDescription> };

export type LockOutcome = { status: 'ok'; remaining: string[] } | { status: 'expired' } | { error: { code: number; message: string } };

export type ServerRequestMsg =
  | { kind: 'answer'; respondRequestId: string; error?: unknown; result?: unknown; by: string | null }
  | { kind: 'lock'; respondRequestId: string; questionId: string; answer: unknown; by: string | null }
  | { kind: 'timeout' }
  /** `recorded`: the session already wrote the cancel's row and event (the shutdown flush). */
  | { kind: 'cancel'; reason: CancelReason; recorded?: boolean }
  | { kind: 'close' };

export type CoordinatorMsg =
  | { kind: 'sessions'; handles: SessionHandle[] }
  | { kind: 'deadline' }
  | { kind: 'force' }
  | Settled
  | { kind: 'flush-timeout' };
