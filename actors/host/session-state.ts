// A session actor's state. Only the session actor reads or writes it; the running turn's
// `pending` and `lastEventNs` are the one exception, written by the agent's emit/append
// callbacks that the session handed to it for exactly that purpose.
import type { SessionOverrides } from '../../agents/agent.js';
import { decodeOr, encode } from '../../persistence/codec.js';
import type { StoredSession } from '../../persistence/store.js';
import type { SessionRow } from '../../persistence/store-writer.js';
import type { ChatMessage } from '../../protocol/chat.js';
import type { TurnStartFrame } from '../../protocol/frames.js';
import type { HistoryMeta, SessionInfo } from '../../protocol/outbound.js';
import type { ServerRequestMethod } from '../../protocol/rpc.js';
import type { ServerRequestMsg, Settled } from './messages.js';
import type { Ref } from '../runtime.js';

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
}

export type Activity =
  | { phase: 'idle' }
  | { phase: 'waiting'; ticketId: number; frame: TurnStartFrame; turnId: string }
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
  /** Every committed message, in order; a message's position is its seq. */
  history: ChatMessage[];
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
}

export function newSessionState(sid: string, stored: StoredSession | undefined, nowMs: number): SessionState {
  const overrides = decodeOr<SessionOverrides>(stored?.overridesText, {});
  return {
    sid,
    sessionKey: stored?.sessionKey ?? sid,
    history: stored?.messages ?? [],
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
  };
}

export function historyMeta(s: SessionState): HistoryMeta {
  return { session_key: s.sessionKey, history_version: s.historyVersion, message_count: s.history.length };
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
  };
}

/** After a full row save: the row is active when this run's latch is unspent. */
export function rowSaved(s: SessionState): void {
  s.row = s.lifecycle === 'open' ? 'active' : 'inactive';
}

export function sessionInfo(s: SessionState, agentName: string): SessionInfo {
  return {
    agent: agentName,
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
