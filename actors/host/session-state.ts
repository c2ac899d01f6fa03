// A session actor's state. Only the session actor reads or writes it; the running turn's
// `pending` and `lastEventNs` are the one exception, written by the agent's emit/append
// callbacks that the session handed to it for exactly that purpose.
import type { SessionDeleteFrame } from '../../protocol/frames.js';
import type { TurnSpan } from './turn-tracing.js';
import type { SessionOverrides } from '../../agents/agent.js';
import { decodeOr, encode } from '../../persistence/codec.js';
import type { StoredSession } from '../../persistence/store.js';
import type { QueuedPrompt, SessionRow, SubmitRecord, TurnReport } from '../../persistence/store-writer.js';
import type { ChatMessage } from '../../protocol/chat.js';
import type { TurnStartFrame } from '../../protocol/frames.js';
import type { HistoryMeta, SessionInfo } from '../../protocol/outbound.js';
import type { QueueView } from '../../protocol/queue-view.js';
import { itemView } from './queue-events.js';
import type { Work } from '../../persistence/store.js';
import type { ServerRequestMethod } from '../../protocol/rpc.js';
import type { ServerRequestMsg, Settled } from './messages.js';
import type { Ref } from '../runtime.js';
import { SteeringInbox } from './steering-inbox.js';
import { QueueRetry } from './queue-retry.js';

export interface RunningTurn {
  turnId: string;
  requestId: string;
  ticketId: number;
  startedNs: bigint;
  startedAt: number;
  /** The prompt's position in the history: what lies before it is what a compression may replace. */
  promptSeq: number;
  controller: AbortController;
  /** Messages the agent appended that are not committed yet. */
  pending: ChatMessage[];
  /** host_ns of the agent's last event in this turn; null until it emits one. */
  lastEventNs: bigint | null;
  /** Set when the turn's end is handled; a late emit or append from the agent is dropped. */
  finished: boolean;
  cancelActivityTimer: () => void;
  /** Set when the turn runs a queued prompt: its events carry the queue id. */
  queueId?: string;
  /** Texts steered into this turn; the agent takes them (the same exception as `pending`). */
  steering: SteeringInbox;
  /** The model and usage the agent reported so far (PROTOCOL.md §5.7): stored with each save and the end (the same exception). */
  report: TurnReport;
  /** Its span (PROTOCOL.md §5.8); null when tracing is off. */
  span: TurnSpan | null;
}

export type Activity =
  | { phase: 'idle' }
  | {
      phase: 'waiting';
      ticketId: number;
      frame: TurnStartFrame;
      turnId: string;
      /** The queued prompt this turn runs: its row leaves the queue in the commit that starts it. */
      queued?: QueuedPrompt;
      steering: SteeringInbox;
      /** The rows that store its client_message_id, written with the turn's start. */
      remember?: Work;
      /** When it arrived (epoch ms): its span begins there (PROTOCOL.md §5.8). */
      arrivedAt: number;
    }
  | { phase: 'running'; turn: RunningTurn };

/** The one-shot finalize latch: spent by finalization; a retained session keeps it unspent. */
export type Lifecycle = 'open' | 'finalized' | 'retained';

export interface OpenRequest {
  id: string;
  method: ServerRequestMethod;
  ref: Ref<ServerRequestMsg>;
  createdMs: number;
}

export interface SessionState {
  readonly sid: string;
  sessionKey: string;
  /**
   * How many messages the session has committed; a message's position is its seq. The messages
   * themselves are read from the database when needed (`store.messages`), never kept here.
   */
  messageCount: number;
  historyVersion: number;
  overrides: SessionOverrides;
  overridesText: string;
  cwd: string | null;
  /**
   * The session's row: `none` (never stored; a turn.start may seed history), `inactive` (stored,
   * not yet marked active by this run), `active` (marked active by this run: a turn start need
   * not write it again).
   */
  row: 'none' | 'inactive' | 'active';
  generation: number;
  activity: Activity;
  lifecycle: Lifecycle;
  requests: Map<string, OpenRequest>;
  /** Shutdown coordinators waiting for this session to be idle; the ack finalizes it. */
  drainWaiters: { replyTo: Ref<Settled>; endReason: string }[];
  turnsRun: number;
  lastActiveMs: number;
  /** Prompts waiting for the running turn to end, in order (PROTOCOL.md §2.1); committed before they are answered. */
  queue: QueuedPrompt[];
  queueRevision: number;
  /**
   * The highest position any of the session's queue rows was given (or loaded with): a new prompt
   * goes after it. Not the last item in memory: the head leaves memory when it starts waiting for a
   * worker, but its row stays until its start commits, and a prompt placed before it would run
   * first once the session is loaded again (on another node, after a crash).
   */
  queueTail: number;
  /** A queue loaded by this host waits for the parent's `queue resume` before anything of it runs. */
  queuePaused: boolean;
  /** Holds the queue for a while after its head failed to start. */
  queueRetry: QueueRetry;
  /** Why the queue waits for a budget's reset, as last said (PROTOCOL.md §5.7): said again only when it changes. */
  budgetHeld: string | null;
  /** How many accepted client_message_ids the database remembers for the session (at most MAX_SUBMITS). */
  submitCount: number;
  /** A guest agent's own session id (AGENT.md §6), as committed. */
  agentSessionId: string | null;
  /** The catalogue's name of its agent (AGENT.md §8): fixed for its life; one stored without one takes the default. */
  agentName: string;
  /** A delete that interrupted the running turn (PROTOCOL.md §2.3): it goes on when the turn has ended. */
  deleting: SessionDeleteFrame | null;
}

export function newSessionState(sid: string, stored: StoredSession | undefined, nowMs: number, defaultAgent: string): SessionState {
  const overrides = decodeOr<SessionOverrides>(stored?.overridesText, {});
  return {
    sid,
    sessionKey: stored?.sessionKey ?? sid,
    messageCount: stored?.messageCount ?? 0,
    historyVersion: stored?.historyVersion ?? 0,
    overrides,
    overridesText: stored?.overridesText || encode(overrides),
    cwd: stored?.cwd ?? null,
    row: stored === undefined ? 'none' : 'inactive',
    generation: 0,
    activity: { phase: 'idle' },
    lifecycle: 'open',
    requests: new Map(),
    drainWaiters: [],
    turnsRun: 0,
    lastActiveMs: nowMs,
    queue: stored?.queue ?? [],
    queueRevision: stored?.queueRevision ?? 0,
    queueTail: Math.max(-1, ...(stored?.queue.map((item) => item.position) ?? [])),
    // A queue taken over from a dead node runs at once: a client named the session to bring it here.
    queuePaused: (stored?.queue.length ?? 0) > 0 && stored?.takenOver === undefined,
    queueRetry: new QueueRetry(),
    budgetHeld: null,
    submitCount: stored?.submitCount ?? 0,
    agentSessionId: stored?.agentSessionId ?? null,
    agentName: stored?.agent ?? defaultAgent,
    deleting: null,
  };
}

/** The current turn's steering inbox: a waiting turn's or a running one's. */
export function currentSteering(s: SessionState): SteeringInbox | null {
  return s.activity.phase === 'running' ? s.activity.turn.steering : s.activity.phase === 'waiting' ? s.activity.steering : null;
}

export function currentTurnId(s: SessionState): string | null {
  return s.activity.phase === 'running' ? s.activity.turn.turnId : s.activity.phase === 'waiting' ? s.activity.turnId : null;
}

export function historyMeta(s: SessionState): HistoryMeta {
  return { session_key: s.sessionKey, history_version: s.historyVersion, message_count: s.messageCount };
}

/** The full session row, as of `historyVersion`. */
export function sessionRow(s: SessionState, bootId: string, historyVersion = s.historyVersion): SessionRow {
  return {
    sid: s.sid,
    activate: s.lifecycle === 'open',
    sessionKey: s.sessionKey,
    historyVersion,
    overridesText: s.overridesText,
    cwd: s.cwd,
    bootId,
    agent: s.agentName,
  };
}

/** After a full row save: the row is active when this run's latch is unspent. */
export function rowSaved(s: SessionState): void {
  s.row = s.lifecycle === 'open' ? 'active' : 'inactive';
}

export function sessionInfo(s: SessionState): SessionInfo {
  return {
    agent: s.agentName,
    model: s.overrides.model ?? null,
    personality: s.overrides.personality ?? null,
    system_prompt: s.overrides.systemPrompt ?? null,
    cwd: s.cwd,
    turns: s.turnsRun,
  };
}

export function setOverrides(s: SessionState, overrides: SessionOverrides): void {
  s.overrides = overrides;
  s.overridesText = encode(overrides);
}

/** Accepted client_message_ids each session remembers (PROTOCOL.md §2.1). */
const MAX_SUBMITS = 1000;

/**
 * The rows that remember an accepted client_message_id, forgetting the session's oldest past
 * MAX_SUBMITS. They live in the database only (a session's ids could fill the host's memory);
 * the count is moved on now, so a commit that fails leaves it one high: an id forgotten early.
 */
export function rememberSubmit(s: SessionState, frame: TurnStartFrame, record: SubmitRecord): Work {
  const id = frame.client_message_id;
  if (id === undefined) return () => {};
  const full = s.submitCount >= MAX_SUBMITS;
  if (!full) s.submitCount++;
  return (w) => {
    if (full) w.forgetOldestSubmit(s.sid);
    w.rememberSubmit(s.sid, id, record);
  };
}

export function queueView(s: SessionState): QueueView {
  return { revision: s.queueRevision, items: s.queue.map(itemView) };
}
