// A session's turn, from turn.start to turn.end (PROTOCOL.md §1.3, durability rules 1 and 2).
//   idle ──turn.start──▶ waiting ──slot──▶ (commit prompt + running row) ──▶ running ──turn-done──▶ (commit tail) ──▶ idle
import { uniqueId } from '../../protocol/unique-ids.js';
import { AgentFailure, type TurnResult } from '../../agents/agent.js';
import type { ChatMessage } from '../../protocol/chat.js';
import type { TurnStartFrame } from '../../protocol/frames.js';
import { Nanos } from '../../protocol/nanos.js';
import type { TurnErrorReason } from '../../protocol/outbound.js';
import type { QueuedPrompt, TurnReport } from '../../persistence/store-writer.js';
import { scheduleIdOf } from '../../persistence/outbox.js';
import { LeaseLost, storageProblem, type StoredTurnStatus, type Work } from '../../persistence/store.js';
import { rpcEvent } from '../../protocol/rpc.js';
import type { ArrivalTicket, FinishedTurn, HostMsg, SessionMsg, TurnOutcome } from './messages.js';
import { stopActor, tell, SECOND_MS, type Ref } from '../runtime.js';
import type { HostServices } from './services.js';
import {
  historyMeta,
  rememberSubmit,
  rowSaved,
  sessionInfo,
  sessionRow,
  setOverrides,
  type RunningTurn,
  type SessionState,
} from './session-state.js';
import { SteeringInbox } from './steering-inbox.js';
import { finalize } from './session-lifecycle.js';
import { buildTurnContext, runAgent } from './turn-context.js';
import { personOf } from './turn-admission.js';
import type { TurnSpan } from './turn-tracing.js';
import { budgetMessage, budgetRefusal, type BudgetExceeded } from '../../persistence/ledger.js';
import { OWNER } from '../../persistence/people.js';

/** A queue held by a budget looks again this often before the reset: an admin may raise the budget. */
const BUDGET_LOOK_AGAIN_MS = 60 * SECOND_MS;

export interface SessionEnv {
  services: HostServices;
  host: Ref<HostMsg>;
  self: Ref<SessionMsg>;
}

const ACTIVITY_PERIOD_MS = SECOND_MS;


/** A turn.start that will not run gives back the worker the host reserved for it. */
export function releaseReserved(ticket: ArrivalTicket, env: SessionEnv): void {
  if (ticket.reserved) tell(env.host, { kind: 'release', ticketId: ticket.id });
}

/**
 * turn.start: refuse, answer a stale queued prompt, or run: at once on a slot the host reserved,
 * else after queueing for one.
 */
export async function requestTurn(s: SessionState, frame: TurnStartFrame, ticket: ArrivalTicket, env: SessionEnv): Promise<void> {
  const { writer, clock } = env.services;
  const refuse = (): void => releaseReserved(ticket, env);
  if (s.activity.phase !== 'idle') {
    refuse();
    writer.write({ type: 'turn.error', sid: s.sid, request_id: frame.request_id, message: 'session busy', reason: 'busy' });
    return;
  }
  if (s.lifecycle !== 'open') {
    // Finalized or retained by a shutdown: a turn.start that was already on its way runs no more.
    refuse();
    writer.write({ type: 'turn.error', sid: s.sid, request_id: frame.request_id, message: 'host shutting down', reason: 'shutting_down' });
    return;
  }
  if (frame.queued_prompt_generation !== undefined && frame.queued_prompt_generation !== s.generation) {
    // An interrupt overtook this queued prompt: it ends as interrupted and nothing runs.
    refuse();
    writer.write({ type: 'turn.end', sid: s.sid, request_id: frame.request_id, interrupted: true, ended_ns: Nanos.of(clock.hostNs()) });
    return;
  }
  // A submit that will wait for a worker is answered `accepted` now: one over a budget hears 4029 first, not after it.
  const over = ticket.reserved || frame.on_busy === undefined ? null : await budgetOver(frame, env);
  if (over !== null) {
    writer.write({ type: 'turn.error', sid: s.sid, request_id: frame.request_id, message: budgetMessage(over), reason: 'budget', budget: budgetRefusal(over) });
    return;
  }
  const ticketId = ticket.id;
  const turnId = frame.turn_id ?? uniqueId('turn');
  const remember = rememberSubmit(s, frame, { turnId, queueId: null, steered: false });
  s.activity = { phase: 'waiting', ticketId, frame, turnId, steering: new SteeringInbox(), remember, arrivedAt: Date.now() };
  s.lastActiveMs = clock.nowMs();
  // Only a parent that speaks PROTOCOL.md §2.1 hears this (the original host never wrote it), and
  // only for a turn that waits for a worker: its parent answers the submit now, not after a whole
  // turn of another session. A turn that starts at once is answered by its turn.started: a frame
  // fewer per turn, which the host writes and the daemon reads (its host spent 6% less CPU a turn).
  if (frame.on_busy !== undefined && !ticket.reserved) writer.write({ type: 'turn.accepted', sid: s.sid, request_id: frame.request_id, turn_id: turnId });
  if (ticket.reserved) await beginTurn(s, ticketId, env);
  else tell(env.host, { kind: 'admit', ticket: { id: ticketId, person: personOf(frame.by), sid: s.sid, session: env.self } });
}

/** A worker slot was granted: commit the prompt, say turn.started, run the agent. */
export async function beginTurn(s: SessionState, ticketId: number, env: SessionEnv): Promise<void> {
  const { store, writer, clock, bootId } = env.services;
  if (s.activity.phase !== 'waiting' || s.activity.ticketId !== ticketId) {
    tell(env.host, { kind: 'release', ticketId }); // withdrawn while the grant was in flight
    return;
  }
  const { frame, turnId, queued, steering, remember, arrivedAt } = s.activity;
  const over = await budgetOver(frame, env);
  if (over !== null) {
    refuseOverBudget(s, ticketId, over, env);
    return;
  }
  const isNew = s.row === 'none';
  adoptFrameSettings(s, frame, isNew);
  const seed = isNew && frame.history ? frame.history : [];
  const prompt: ChatMessage = { role: 'user', content: frame.text, ...(frame.content === undefined ? {} : { parts: frame.content }) };
  const firstSeq = s.messageCount;
  const version = (isNew && frame.history_version !== undefined ? frame.history_version : s.historyVersion) + 1;
  // The row is written once per run (to mark it active); later turn starts only add rows.
  const row = s.row === 'active' ? undefined : sessionRow(s, bootId, version);
  // A queued prompt leaves the queue in the commit that starts its turn: it never runs twice.
  const queueRevision = queued ? s.queueRevision + 1 : s.queueRevision;
  const fire = fireOf(frame.client_message_id ?? queued?.clientMessageId ?? null);
  let history: readonly ChatMessage[];
  try {
    // What the agent will see: read before the start commits, so a store that cannot be read fails the turn before it starts.
    const stored = firstSeq === 0 ? [] : await store.messages(s.sid, 0, firstSeq);
    history = Object.freeze(seed.length > 0 ? [...stored, ...seed] : stored);
  } catch (err) {
    failBeforeStart(s, frame, turnId, ticketId, err as Error, env);
    return;
  }
  const span = startSpan(s, turnId, frame, arrivedAt, env);
  try {
    await store.commit((w) => {
      if (row) w.saveSession(row);
      if (seed.length > 0) w.appendMessages(s.sid, firstSeq, seed, null);
      w.appendMessages(s.sid, firstSeq + seed.length, [prompt], turnId);
      w.startTurn(turnId, s.sid, frame.request_id, bootId, frame.by ?? null, Date.now(), span?.stored ?? null);
      remember?.(w);
      if (queued) {
        w.removeQueued(queued.queueId);
        w.setQueueRevision(s.sid, queueRevision);
      }
      // Reported with the commit that starts the fire's turn: once per fire, before its turn's end.
      if (fire !== null && env.services.webhookEvents.has('schedule.fired')) w.queueWebhook(s.sid, 'schedule.fired', turnId, fire.clientMessageId);
    });
  } catch (err) {
    const truth = await storedOutcome(s.sid, turnId, err as Error, env);
    if (truth !== 'running') span?.end({ outcome: 'failed', error: { type: 'storage', message: `could not persist the turn: ${storageProblem(err as Error)}` } });
    if (truth === 'unknown' && queued) {
      // Its next try learns what this one did (the same turn id): the queue waits, nobody is told a failure that may not be one.
      env.services.log.warn({ sid: s.sid, turnId, why: storageProblem(err as Error) }, "the queued prompt's start may or may not have committed: it is tried again");
      putBack(s, ticketId, env);
      ackDrainWaiters(s);
      return;
    }
    if (truth !== 'running') {
      // Ended by another (a node that took the session over recovered it): the session is not this host's any more.
      failBeforeStart(s, frame, turnId, ticketId, truth === 'none' || truth === 'unknown' ? (err as Error) : new LeaseLost([s.sid]), env);
      return;
    }
    env.services.log.warn({ sid: s.sid, turnId, why: storageProblem(err as Error) }, "the turn start's commit went through though its answer was lost: the turn runs");
  }
  if (queued) {
    s.queueRevision = queueRevision;
    s.queueRetry.started();
    s.budgetHeld = null;
    env.services.queueEvents.announce(s);
  }
  const historyLength = firstSeq + seed.length;
  s.messageCount = historyLength + 1;
  s.historyVersion = version;
  if (row) rowSaved(s);
  s.turnsRun++;
  const turn: RunningTurn = {
    turnId,
    requestId: frame.request_id,
    ticketId,
    startedNs: clock.hostNs(),
    startedAt: Date.now(),
    promptSeq: historyLength,
    controller: new AbortController(),
    pending: [],
    lastEventNs: null,
    finished: false,
    cancelActivityTimer: scheduleActivityTick(turnId, env),
    steering,
    report: {},
    span,
    ...(queued ? { queueId: queued.queueId } : {}),
  };
  s.activity = { phase: 'running', turn };
  writer.write({ type: 'turn.started', sid: s.sid, request_id: frame.request_id, turn_id: turnId, ...queueIdOf(turn), ...(fire === null ? {} : { schedule_id: fire.scheduleId }), started_ns: Nanos.of(turn.startedNs) });
  const spec = { sid: s.sid, prompt: frame.text, content: frame.content ?? [], history, overrides: { ...s.overrides }, cwd: s.cwd, agentSessionId: s.agentSessionId };
  // On the next turn of the loop, after the writer's flush: turn.started is on the wire before
  // the agent runs, even an agent that blocks the loop at once.
  setImmediate(() => runAgent(env.services.agents, s.agentName, buildTurnContext(spec, turn, env.services, env.self), env.self));
}

function adoptFrameSettings(s: SessionState, frame: TurnStartFrame, isNew: boolean): void {
  if (isNew && frame.session_key) s.sessionKey = frame.session_key;
  if ((frame.cwd && frame.cwd !== s.cwd) || (frame.model_override && frame.model_override !== s.overrides.model)) {
    if (s.row === 'active') s.row = 'inactive'; // the row must be written again with the new settings
  }
  if (frame.cwd) s.cwd = frame.cwd;
  if (frame.model_override && frame.model_override !== s.overrides.model) {
    setOverrides(s, { ...s.overrides, model: frame.model_override });
  }
}

/** The turn's span, begun when it arrived (PROTOCOL.md §5.8); null when tracing is off. */
function startSpan(s: SessionState, turnId: string, frame: TurnStartFrame, arrivedAt: number, env: SessionEnv): TurnSpan | null {
  const traced = frame.trace_context === undefined ? {} : { traceContext: frame.trace_context };
  return env.services.tracing?.startTurn({ sid: s.sid, turnId, agent: s.agentName, by: frame.by ?? null, prompt: frame.text, arrivedAt, ...traced }) ?? null;
}

/** A schedule's fire: its turn.started names the schedule, and its start is reported as schedule.fired. */
function fireOf(clientMessageId: string | null): { scheduleId: string; clientMessageId: string } | null {
  const scheduleId = clientMessageId === null ? undefined : scheduleIdOf(clientMessageId);
  return scheduleId === undefined ? null : { scheduleId, clientMessageId: clientMessageId! };
}

const queueIdOf = (turn: { queueId?: string }): { queue_id?: string } => (turn.queueId === undefined ? {} : { queue_id: turn.queueId });

/**
 * What a commit whose answer was an error did, as the store has it. The PostgreSQL store asks the
 * server about a COMMIT that went unanswered, but only for so long: past that (a server that
 * restarts), a commit reported failed may have gone through, and the same commit tried again then
 * fails for ever on the rows it already wrote (a queue held at its head, in a chaos run). The
 * turn's status; `none` when it never started; `unknown` when the store cannot say now. A lost
 * lease is certain: the fence rolled the commit back.
 */
async function storedOutcome(sid: string, turnId: string, err: Error, env: SessionEnv): Promise<StoredTurnStatus | 'none' | 'unknown'> {
  if (err instanceof LeaseLost) return 'none';
  const { store } = env.services;
  try {
    const status = await store.turnStatus(turnId);
    if (status === null) return 'none';
    // The history cache learns only of commits that answered: it forgets what it may have missed.
    store.history.forget(sid);
    return status;
  } catch {
    return 'unknown';
  }
}

/**
 * Nothing of the turn was stored, and nothing of it is in memory: the session is as it was. A
 * queued prompt stays queued (its row is untouched); the client hears of the failure once.
 */
function failBeforeStart(s: SessionState, frame: TurnStartFrame, turnId: string, ticketId: number, err: Error, env: SessionEnv): void {
  env.services.log.error({ err, sid: s.sid, turnId }, 'could not commit the turn start');
  putBack(s, ticketId, env);
  env.services.writer.write({
    type: 'turn.error',
    sid: s.sid,
    request_id: frame.request_id,
    turn_id: turnId,
    message: `could not persist the turn: ${storageProblem(err)}`,
    reason: err instanceof LeaseLost ? 'lease_lost' : 'storage',
  });
  ackDrainWaiters(s);
  if (err instanceof LeaseLost) forget(env);
}

/**
 * The budget the turn's sender is over (PROTOCOL.md §5.7), read from the store every node shares;
 * null for the home's owner, who has none. A ledger that cannot be read holds nobody back: the
 * start's own commit says whether the store works.
 */
async function budgetOver(frame: TurnStartFrame, env: SessionEnv): Promise<BudgetExceeded | null> {
  if (frame.by === undefined || frame.by === OWNER) return null;
  try {
    return await env.services.store.overBudget(frame.by);
  } catch (err) {
    env.services.log.warn({ by: frame.by, why: storageProblem(err as Error) }, 'could not read the ledger for a budget: the turn goes on');
    return null;
  }
}

/**
 * Over a budget, the turn does not start. A submit (a retry, a schedule's fire) hears 4029; a
 * queued prompt stays at the head of its queue, which waits for the reset (looking again each
 * minute: a budget may be raised) and says why, once.
 */
function refuseOverBudget(s: SessionState, ticketId: number, over: BudgetExceeded, env: SessionEnv): void {
  if (s.activity.phase !== 'waiting') return;
  const { frame, turnId, queued } = s.activity;
  const message = budgetMessage(over);
  if (queued !== undefined) {
    returnToQueue(s);
    s.queueRetry.holdFor(Math.min(over.resets_at - Date.now(), BUDGET_LOOK_AGAIN_MS), env.services.clock, env.self);
    if (s.budgetHeld !== message) {
      s.budgetHeld = message;
      env.services.writer.write({ type: 'rpc', sid: s.sid, message: rpcEvent(s.sid, 'status.update', { kind: 'budget', text: `queued prompts wait: ${message}` }) });
    }
  } else {
    env.services.writer.write({ type: 'turn.error', sid: s.sid, request_id: frame.request_id, turn_id: turnId, message, reason: 'budget', budget: budgetRefusal(over) });
  }
  s.activity = { phase: 'idle' };
  tell(env.host, { kind: 'release', ticketId });
  ackDrainWaiters(s);
}

/** The waiting turn will not start now: a queued prompt is the queue's head again, held a while; the worker goes back. */
function putBack(s: SessionState, ticketId: number, env: SessionEnv): void {
  if (returnToQueue(s)) s.queueRetry.hold(env.services.clock, env.self);
  s.activity = { phase: 'idle' };
  tell(env.host, { kind: 'release', ticketId });
}

/**
 * The agent finished (or threw): commit its messages, then say turn.end (or turn.error). Answers
 * the steered texts the turn did not store, for the head of the queue.
 */
export async function finishTurn(s: SessionState, turnId: string, result: TurnResult | null, error: Error | null, env: SessionEnv): Promise<QueuedPrompt[]> {
  if (s.activity.phase !== 'running' || s.activity.turn.turnId !== turnId) return [];
  const turn = s.activity.turn;
  turn.finished = true;
  turn.cancelActivityTimer();
  if (s.lifecycle === 'retained') return []; // the shutdown already wrote this turn's partial tail
  const interrupted = turn.controller.signal.aborted || result?.interrupted === true;
  const outcome: TurnOutcome = interrupted ? 'interrupted' : error ? 'failed' : 'completed';
  const reply = result?.reply ?? null;
  const messages = turn.pending.slice();
  if (reply !== null && (outcome === 'completed' || reply !== '')) messages.push({ role: 'assistant', content: reply, ...(result?.parts === undefined ? {} : { parts: result.parts }) });
  const failure = outcome === 'failed' ? (error?.message ?? 'agent failed') : null;
  // What the result says, else what the agent reported as it went (a failed turn keeps what was known).
  const report: TurnReport = { ...turn.report, ...(result?.model === undefined ? {} : { model: result.model }), ...(result?.usage === undefined ? {} : { usage: result.usage }) };
  const persisted = await commitTurnEnd(s, turn, messages, { outcome, failure, report }, env);
  s.activity = { phase: 'idle' };
  s.lastActiveMs = env.services.clock.nowMs();
  tell(env.host, { kind: 'release', ticketId: turn.ticketId, finished: { ...finishedTurn(s, turn, outcome), ...report } });
  const ended = { outcome, ...report, reply };
  if (persisted !== true) {
    const failed = { type: persisted instanceof LeaseLost ? 'lease_lost' : 'storage', message: `could not persist the turn: ${storageProblem(persisted)}` } as const;
    turn.span?.end({ ...ended, error: failed });
    reportTurnError(s, turn, failed.message, failed.type, env);
  } else if (outcome === 'failed') {
    const reason = error instanceof AgentFailure ? error.reason : 'exception';
    turn.span?.end({ ...ended, error: { type: reason, message: failure! } });
    reportTurnError(s, turn, failure!, reason, env);
  } else {
    turn.span?.end(ended);
    reportTurnEnd(s, turn, result, report, interrupted, env);
  }
  ackDrainWaiters(s);
  if (persisted instanceof LeaseLost) forget(env);
  return turn.steering.leftover();
}

/**
 * Another node took the session (its lease was lost): this host forgets it and writes nothing
 * more of it. The next frame that names it loads it again, and finds its owner.
 */
function forget(env: SessionEnv): void {
  stopActor(env.self);
}

interface TurnEnding {
  outcome: TurnOutcome;
  failure: string | null;
  report: TurnReport;
}

async function commitTurnEnd(
  s: SessionState,
  turn: RunningTurn,
  messages: ChatMessage[],
  ending: TurnEnding,
  env: SessionEnv,
): Promise<true | Error> {
  const { store } = env.services;
  const firstSeq = s.messageCount;
  const version = s.historyVersion + (messages.length > 0 ? 1 : 0);
  const taken = turn.steering.takenSoFar();
  try {
    await store.commit((w) => {
      w.appendMessages(s.sid, firstSeq, messages, turn.turnId);
      w.endTurn(turn.turnId, ending.outcome, ending.failure, ending.report);
      w.touchSession(s.sid, version);
      removeQueuedRows(taken)(w);
      const event = ending.outcome === 'failed' ? 'turn.error' : 'turn.end';
      if (env.services.webhookEvents.has(event)) w.queueWebhook(s.sid, event, turn.turnId);
    });
  } catch (err) {
    if ((await storedOutcome(s.sid, turn.turnId, err as Error, env)) === ending.outcome) {
      env.services.log.warn({ sid: s.sid, turnId: turn.turnId, why: storageProblem(err as Error) }, "the turn end's commit went through though its answer was lost");
    } else {
      env.services.log.error({ err, sid: s.sid, turnId: turn.turnId }, 'could not commit the turn end');
      undoTurn(s, turn, err as Error, env);
      return err as Error;
    }
  }
  turn.steering.committed(taken.length);
  s.messageCount += messages.length;
  s.historyVersion = version;
  return true;
}

/** The queue rows of these prompts go: steered texts stored as messages, a prompt that ran, texts a stop dropped. */
export function removeQueuedRows(items: readonly QueuedPrompt[]): Work {
  return (w) => {
    for (const item of items) w.removeQueued(item.queueId);
  };
}

/**
 * The turn's end could not be stored (a full disk, a database that went away): the session
 * forgets what the turn made, so none of it reaches the history later, and the database owes the
 * same undoing, paid by the next transaction that commits. The prompt stays: it was committed and
 * acknowledged at the start, and a turn that fails keeps it, as one lost with its node does.
 */
function undoTurn(s: SessionState, turn: RunningTurn, err: Error, env: SessionEnv): void {
  const fromSeq = turn.promptSeq + 1;
  s.messageCount = fromSeq;
  // Nothing more of a session whose lease was lost may be written: its new owner recovers the turn.
  if (err instanceof LeaseLost) return;
  const error = `could not persist the turn: ${storageProblem(err)}`;
  env.services.store.owe((w) => w.undoTurn(s.sid, fromSeq, turn.turnId, error, turn.report));
}

function reportTurnEnd(s: SessionState, turn: RunningTurn, result: TurnResult | null, report: TurnReport, interrupted: boolean, env: SessionEnv): void {
  const { writer, clock } = env.services;
  if (result !== null) writer.write({ type: 'rpc', sid: s.sid, message: rpcEvent(s.sid, 'message.complete', { text: result.reply }) });
  writer.write({
    type: 'turn.end',
    sid: s.sid,
    request_id: turn.requestId,
    turn_id: turn.turnId,
    ...queueIdOf(turn),
    ...historyMeta(s),
    interrupted,
    ended_ns: Nanos.of(clock.hostNs()),
    ...(report.usage === undefined ? {} : { usage: report.usage }),
    ...(result?.finishReason === undefined ? {} : { finish_reason: result.finishReason }),
    session_info: sessionInfo(s),
    session_info_emitted: true,
  });
}

function reportTurnError(s: SessionState, turn: RunningTurn, message: string, reason: TurnErrorReason, env: SessionEnv): void {
  env.services.writer.write({ type: 'turn.error', sid: s.sid, request_id: turn.requestId, turn_id: turn.turnId, ...queueIdOf(turn), message, reason });
}

function finishedTurn(s: SessionState, turn: RunningTurn, outcome: TurnOutcome): FinishedTurn {
  return { sid: s.sid, turnId: turn.turnId, requestId: turn.requestId, outcome, startedAt: turn.startedAt, endedAt: Date.now() };
}

/**
 * Stops the session's turn: a running one is aborted (it ends through finishTurn), a waiting one
 * ends now as interrupted; either way the queued-prompt generation moves on. Answers the queued
 * prompt a waiting turn was about to run: it ran (interrupted), so its row must go.
 */
export function stopTurn(s: SessionState, env: SessionEnv): QueuedPrompt | null {
  const { writer, clock } = env.services;
  const activity = s.activity;
  s.generation++;
  if (activity.phase === 'running') {
    activity.turn.controller.abort();
    for (const request of s.requests.values()) tell(request.ref, { kind: 'cancel', reason: 'interrupted' });
    return null;
  }
  if (activity.phase !== 'waiting') return null;
  s.activity = { phase: 'idle' };
  tell(env.host, { kind: 'withdraw', ticketId: activity.ticketId });
  const queueId = activity.queued === undefined ? {} : { queue_id: activity.queued.queueId };
  writer.write({ type: 'turn.end', sid: s.sid, request_id: activity.frame.request_id, turn_id: activity.turnId, ...queueId, interrupted: true, ended_ns: Nanos.of(clock.hostNs()) });
  ackDrainWaiters(s);
  return activity.queued ?? null;
}

/**
 * A waiting turn that came from the queue and will not start now: its prompt is the queue's head
 * again (its row never left). False when the waiting turn was not a queued prompt.
 */
function returnToQueue(s: SessionState): boolean {
  if (s.activity.phase !== 'waiting' || s.activity.queued === undefined) return false;
  s.queue.unshift(s.activity.queued);
  return true;
}

/** The host closed admission while this turn waited for a slot: it never started. */
export function refuseWaitingTurn(s: SessionState, ticketId: number, env: SessionEnv): void {
  if (s.activity.phase !== 'waiting' || s.activity.ticketId !== ticketId) return;
  const { frame, turnId, queued } = s.activity;
  if (queued !== undefined) {
    // A queued prompt waits for the next host: nothing failed.
    returnToQueue(s);
    s.activity = { phase: 'idle' };
    ackDrainWaiters(s);
    return;
  }
  s.activity = { phase: 'idle' };
  env.services.writer.write({
    type: 'turn.error',
    sid: s.sid,
    request_id: frame.request_id,
    turn_id: turnId,
    message: 'host shutting down',
    reason: 'shutting_down',
  });
  ackDrainWaiters(s);
}

/** Once idle, a drained session acks its shutdown coordinator; the ack finalizes it. */
export function ackDrainWaiters(s: SessionState): void {
  if (s.activity.phase !== 'idle' || s.drainWaiters.length === 0) return;
  const waiters = s.drainWaiters;
  s.drainWaiters = [];
  for (const waiter of waiters) tell(waiter.replyTo, finalize(s, waiter.endReason, 'drain'));
}

/** Admission is closed: a turn still waiting for a slot will never start. */
export function dropWaitingTurn(s: SessionState, env: SessionEnv): void {
  if (s.activity.phase !== 'waiting') return;
  tell(env.host, { kind: 'withdraw', ticketId: s.activity.ticketId });
  refuseWaitingTurn(s, s.activity.ticketId, env);
}

function scheduleActivityTick(turnId: string, env: SessionEnv): () => void {
  return env.services.clock.after(ACTIVITY_PERIOD_MS, () => tell(env.self, { kind: 'activity-tick', turnId }));
}

/** About once a second while a turn runs: the agent's last event stamp, never the host's own clock. */
export function sampleActivity(s: SessionState, turnId: string, env: SessionEnv): void {
  if (s.activity.phase !== 'running' || s.activity.turn.turnId !== turnId || s.activity.turn.finished) return;
  const turn = s.activity.turn;
  const stamp = turn.lastEventNs !== null && turn.lastEventNs > turn.startedNs ? Nanos.of(turn.lastEventNs) : null;
  env.services.writer.write({
    type: 'rpc',
    sid: s.sid,
    message: { jsonrpc: '2.0', method: 'compute_host.activity', params: { session_id: s.sid, turn_id: turnId, activity_ns: stamp } },
  });
  turn.cancelActivityTimer = scheduleActivityTick(turnId, env);
}
