// A session's input while a turn runs (PROTOCOL.md §2.1, §1.3): what a turn.start does when the
// session is busy (on_busy), the durable queue behind the running turn, steering, and the
// client_message_ids that make a submit idempotent. Every change is committed before it is
// answered, and each change of the queue is one `session.queue` event with the next revision.
import { uniqueId } from '../../protocol/unique-ids.js';
import type { Work } from '../../persistence/store.js';
import { storageProblem } from '../../persistence/store.js';
import type { QueuedPrompt, SubmitRecord } from '../../persistence/store-writer.js';
import type { InterruptFrame, QueueFrame, TurnStartFrame } from '../../protocol/frames.js';
import { Nanos } from '../../protocol/nanos.js';
import { ErrorCodes } from '../../protocol/client-rpc.js';
import type { SubmitState } from '../../protocol/outbound.js';
import { tell } from '../runtime.js';
import { currentSteering, currentTurnId, queueView, rememberSubmit, type SessionState } from './session-state.js';
import { releaseReserved, removeQueuedRows, requestTurn, stopTurn, type SessionEnv } from './session-turn.js';
import type { ArrivalTicket } from './messages.js';
import { SteeringInbox } from './steering-inbox.js';
import { nextTicketId, personOf } from './turn-admission.js';

/**
 * Prompts one session may hold in its queue. Every change sends the whole queue to the clients
 * (PROTOCOL.md §2.1), so a queue of n costs n² over its life: a client that never stops
 * submitting gets "session busy" here instead of slowing the host and the daemon for everyone.
 */
const MAX_QUEUED = 1000;

/** turn.start: a duplicate runs nothing; a busy session queues, steers, interrupts or refuses as asked. */
export async function receiveTurnStart(s: SessionState, frame: TurnStartFrame, ticket: ArrivalTicket, env: SessionEnv): Promise<void> {
  // requestTurn runs it now, or refuses it (shutting down, busy with on_busy reject).
  if (s.lifecycle !== 'open') return requestTurn(s, frame, ticket, env);
  let duplicate: Duplicate | null;
  try {
    duplicate = await duplicateOf(s, frame, env);
  } catch (err) {
    // The store could not say whether this submit ran before: running it might run it twice.
    releaseReserved(ticket, env);
    const message = `could not read the session's submits: ${storageProblem(err as Error)}`;
    env.services.writer.write({ type: 'turn.error', sid: s.sid, request_id: frame.request_id, message, reason: 'storage' });
    return;
  }
  const onBusy = frame.on_busy ?? 'reject';
  const idle = s.activity.phase === 'idle';
  if (duplicate === null && ((idle && !(onBusy === 'queue' && s.queue.length > 0)) || (!idle && onBusy === 'reject'))) {
    return requestTurn(s, frame, ticket, env);
  }
  releaseReserved(ticket, env);
  // A queue held by a budget looks again when a new prompt comes: the budget may have been raised.
  if (s.budgetHeld !== null && duplicate === null) s.queueRetry.release();
  if (duplicate !== null) {
    env.services.writer.write({ type: 'turn.duplicate', sid: s.sid, request_id: frame.request_id, ...duplicate });
    return;
  }
  switch (onBusy) {
    case 'queue':
    case 'reject': // a paused queue: the prompt waits behind it
      return enqueue(s, frame, 'tail', 'queued', env);
    case 'steer':
      return steer(s, frame, env);
    case 'interrupt':
      await stopAndClear(s, false, env);
      return enqueue(s, frame, 'head', 'accepted', env);
  }
}

/**
 * interrupt (PROTOCOL.md §1.3): with a `turn_id` that is not the session's turn, nothing is
 * touched (`not_current`); otherwise the turn stops, and the queue is cleared unless `keep_queue`.
 * The ack is written before the stopped turn's turn.end.
 */
export async function interrupt(s: SessionState, frame: InterruptFrame, env: SessionEnv): Promise<void> {
  const { writer, clock } = env.services;
  if (frame.turn_id !== undefined && frame.turn_id !== currentTurnId(s)) {
    writer.write({ type: 'interrupt.ack', sid: s.sid, request_id: frame.request_id, applied: false, reason: 'not_current' });
    return;
  }
  writer.write({ type: 'interrupt.ack', sid: s.sid, request_id: frame.request_id, applied: true, applied_ns: Nanos.of(clock.hostNs()) });
  await stopAndClear(s, frame.keep_queue === true, env);
  startNextQueued(s, env);
}

/** A stop means stop: the turn, the texts steered into it and not taken, and (unless kept) the queue. */
async function stopAndClear(s: SessionState, keepQueue: boolean, env: SessionEnv): Promise<void> {
  const dropped = keepQueue ? [] : (currentSteering(s)?.drop() ?? []);
  const ranQueued = stopTurn(s, env);
  const gone = ranQueued === null ? dropped : [...dropped, ranQueued];
  if (keepQueue || s.queue.length === 0) {
    if (ranQueued !== null) await changeQueue(s, env, removeQueuedRows(gone), () => {});
    // Only steered rows go: the queue the clients see did not change.
    else if (gone.length > 0) await env.services.store.commit(removeQueuedRows(gone)).catch((err: Error) => env.services.log.error({ err, sid: s.sid }, 'could not drop steered texts'));
    return;
  }
  await changeQueue(s, env, (w) => w.clearQueue(s.sid), () => (s.queue.length = 0));
}

interface Duplicate {
  state: SubmitState;
  turn_id?: string;
  queue_id?: string;
}

/** A submit the session has accepted before: by its client_message_id, or by a turn id sent again after a host died. */
async function duplicateOf(s: SessionState, frame: TurnStartFrame, env: SessionEnv): Promise<Duplicate | null> {
  const id = frame.client_message_id;
  if (id !== undefined) {
    // Accepted to run and waiting for a worker: its id is stored with the turn's start.
    if (s.activity.phase === 'waiting' && s.activity.frame.client_message_id === id) return { state: 'running', turn_id: s.activity.turnId };
    const record = await env.services.store.submitRecord(s.sid, id);
    if (record !== undefined) return stateOf(s, record);
  }
  const turnId = frame.turn_id;
  if (turnId === undefined) return null;
  const queued = s.queue.find((item) => item.turnId === turnId);
  if (queued) return { state: 'queued', queue_id: queued.queueId, turn_id: queued.turnId };
  if (currentTurnId(s) === turnId) return { state: 'running', turn_id: turnId };
  if (currentSteering(s)?.holds(turnId)) return { state: 'steered' };
  // A submit's id is stored in the commit that accepts it: had this turn ended, its record was found above.
  if (id !== undefined) return null;
  return (await env.services.store.turnStatus(turnId)) !== null ? { state: 'done', turn_id: turnId } : null;
}

function stateOf(s: SessionState, record: SubmitRecord): Duplicate {
  const queued = record.queueId === null ? undefined : s.queue.find((item) => item.queueId === record.queueId);
  if (queued) return { state: 'queued', queue_id: queued.queueId, turn_id: queued.turnId };
  if (currentTurnId(s) === record.turnId) return { state: 'running', turn_id: record.turnId };
  if (record.steered) return { state: 'steered' };
  if (record.queued !== undefined) return adoptQueued(s, record.queued);
  return { state: 'done', turn_id: record.turnId };
}

/**
 * A prompt stored as queued that this host does not hold: its commit went through while the host
 * was told it failed (a connection lost under the COMMIT, an outcome the server could not tell).
 * Its client sent it again; it takes its stored place in the queue, and runs once, in order,
 * instead of being answered `done` and running later, after the prompts queued behind it.
 */
function adoptQueued(s: SessionState, item: QueuedPrompt): Duplicate {
  const at = s.queue.findIndex((other) => other.position > item.position);
  s.queue.splice(at === -1 ? s.queue.length : at, 0, item);
  s.queueTail = Math.max(s.queueTail, item.position);
  return { state: 'queued', queue_id: item.queueId, turn_id: item.turnId };
}

/** An edit is the prompt's new text, whole: files it carried go with the old text (as the store's edit). */
function editedPrompt(item: QueuedPrompt, text: string): QueuedPrompt {
  const { content: _dropped, ...rest } = item;
  return { ...rest, text };
}

function newQueuedPrompt(frame: TurnStartFrame, turnId: string, position: number): QueuedPrompt {
  return {
    queueId: uniqueId('q'),
    text: frame.text,
    clientMessageId: frame.client_message_id ?? null,
    requestId: frame.request_id,
    turnId,
    queuedAt: Date.now(),
    position,
    by: frame.by ?? null,
    ...(frame.trace_context === undefined ? {} : { traceContext: frame.trace_context }),
    ...(frame.content === undefined ? {} : { content: frame.content }),
  };
}

const headPosition = (s: SessionState): number => (s.queue[0]?.position ?? s.queueTail + 1) - 1;
const tailPosition = (s: SessionState): number => ++s.queueTail;

/**
 * The prompt joins the queue, committed before it is answered: `queued` (turn.queued), or
 * `accepted` for the prompt of an on_busy interrupt, which runs as soon as the stopped turn ends.
 */
async function enqueue(s: SessionState, frame: TurnStartFrame, where: 'head' | 'tail', answer: 'queued' | 'accepted', env: SessionEnv): Promise<void> {
  const { writer } = env.services;
  if (s.queue.length >= MAX_QUEUED) {
    writer.write({ type: 'turn.error', sid: s.sid, request_id: frame.request_id, message: `session busy: its queue is full (${MAX_QUEUED} prompts)`, reason: 'busy' });
    return;
  }
  const turnId = frame.turn_id ?? uniqueId('turn');
  const item = newQueuedPrompt(frame, turnId, where === 'head' ? headPosition(s) : tailPosition(s));
  const remember = rememberSubmit(s, frame, { turnId, queueId: item.queueId, steered: false });
  const stored = await changeQueue(s, env, (w) => {
    w.queuePrompt(s.sid, item);
    remember(w);
  }, () => (where === 'head' ? s.queue.unshift(item) : s.queue.push(item)));
  if (stored !== true) {
    writer.write({ type: 'turn.error', sid: s.sid, request_id: frame.request_id, message: `could not queue the prompt: ${stored}`, reason: 'storage' });
    return;
  }
  if (answer === 'queued') {
    writer.write({ type: 'turn.queued', sid: s.sid, request_id: frame.request_id, queue_id: item.queueId, position: s.queue.indexOf(item) + 1, turn_id: turnId });
  } else {
    writer.write({ type: 'turn.accepted', sid: s.sid, request_id: frame.request_id, turn_id: turnId });
  }
  startNextQueued(s, env);
}

/** on_busy steer: the running turn gets the text; a turn its agent cannot steer gets it as the queue's head instead. */
async function steer(s: SessionState, frame: TurnStartFrame, env: SessionEnv): Promise<void> {
  const inbox = currentSteering(s);
  const runningTurn = currentTurnId(s);
  // A turn takes steered text only: a prompt with files waits at the head of the queue instead.
  const steerable = env.services.agents.peek(s.agentName)?.steerable === true && frame.content === undefined;
  if (inbox === null || runningTurn === null || !steerable) return enqueue(s, frame, 'head', 'queued', env);
  const { store, writer } = env.services;
  const item = newQueuedPrompt(frame, frame.turn_id ?? uniqueId('turn'), headPosition(s));
  const remember = rememberSubmit(s, frame, { turnId: item.turnId, queueId: item.queueId, steered: true });
  try {
    await store.commit((w) => {
      w.queuePrompt(s.sid, item, true);
      remember(w);
    });
  } catch (err) {
    writer.write({ type: 'turn.error', sid: s.sid, request_id: frame.request_id, message: `could not steer: ${storageProblem(err as Error)}`, reason: 'storage' });
    return;
  }
  if (currentSteering(s) !== inbox) {
    // The turn ended while the text was being stored: it becomes the queue's head instead.
    await requeue(s, [item], env);
    writer.write({ type: 'turn.queued', sid: s.sid, request_id: frame.request_id, queue_id: item.queueId, position: 1, turn_id: item.turnId });
    return;
  }
  inbox.add(item);
  writer.write({ type: 'turn.steered', sid: s.sid, request_id: frame.request_id, turn_id: runningTurn });
}

/** Steered texts the turn did not store go back to the head of the queue, in their order. */
export async function requeue(s: SessionState, items: QueuedPrompt[], env: SessionEnv): Promise<void> {
  if (items.length === 0) return;
  const first = headPosition(s) - items.length + 1;
  const placed = items.map((item, i) => ({ ...item, position: first + i }));
  const work: Work = (w) => {
    for (const item of placed) {
      w.placeQueued(item.queueId, false, item.position);
      if (item.clientMessageId !== null) w.markSteered(s.sid, item.clientMessageId, false);
    }
  };
  const apply = (): void => void s.queue.unshift(...placed);
  const stored = await changeQueue(s, env, work, apply);
  if (stored !== true) {
    // A full disk: the rows stay marked steered, and the next start puts them at the head.
    apply();
    env.services.log.error({ sid: s.sid, problem: stored }, 'could not put steered texts back in the queue');
  }
}

/** The parent's `queue` frame: look, edit, delete, steer an item into the running turn, or let a new host run the queue. */
export async function runQueueOp(s: SessionState, frame: QueueFrame, env: SessionEnv): Promise<void> {
  const { writer } = env.services;
  const fail = (code: number, message: string): void => writer.write({ type: 'queue.error', sid: s.sid, request_id: frame.request_id, message, code });
  if (frame.op === 'resume') {
    s.queuePaused = false;
    startNextQueued(s, env);
  } else if ('queue_id' in frame) {
    const item = s.queue.find((q) => q.queueId === frame.queue_id);
    if (item === undefined) return fail(ErrorCodes.unknownQueueItem, `unknown queue item: ${frame.queue_id}`);
    const inbox = currentSteering(s);
    if (frame.op === 'steer' && (inbox === null || env.services.agents.peek(s.agentName)?.steerable !== true)) return fail(ErrorCodes.sessionBusy, 'nothing to steer: no turn is running');
    const stored = await changeItem(s, item, frame, inbox, env);
    if (stored !== true) return fail(ErrorCodes.internal, stored);
  }
  writer.write({ type: 'queue.ack', sid: s.sid, request_id: frame.request_id, ...queueView(s) });
}

function changeItem(s: SessionState, item: QueuedPrompt, frame: Extract<QueueFrame, { queue_id: string }>, inbox: SteeringInbox | null, env: SessionEnv): Promise<true | string> {
  const drop = (): void => void s.queue.splice(s.queue.indexOf(item), 1);
  switch (frame.op) {
    case 'edit':
      return changeQueue(s, env, (w) => w.editQueued(item.queueId, frame.text), () => (s.queue[s.queue.indexOf(item)] = editedPrompt(item, frame.text)));
    case 'delete':
      return changeQueue(s, env, (w) => w.removeQueued(item.queueId), drop);
    case 'steer':
      return changeQueue(
        s,
        env,
        (w) => {
          w.placeQueued(item.queueId, true, item.position);
          if (item.clientMessageId !== null) w.markSteered(s.sid, item.clientMessageId, true);
        },
        () => {
          drop();
          inbox!.add(item);
        },
      );
  }
}

/**
 * One change of the queue: its rows and the next revision in one commit, then the change in
 * memory and one `session.queue` event. Answers true, or why it could not be stored.
 */
async function changeQueue(s: SessionState, env: SessionEnv, work: Work, apply: () => void): Promise<true | string> {
  const revision = s.queueRevision + 1;
  try {
    await env.services.store.commit((w) => {
      work(w);
      w.setQueueRevision(s.sid, revision);
    });
  } catch (err) {
    env.services.log.error({ err, sid: s.sid }, 'could not store a change of the queue');
    return storageProblem(err as Error);
  }
  apply();
  s.queueRevision = revision;
  env.services.queueEvents.announce(s);
  return true;
}

/**
 * The session is idle: its queue's head asks for a worker slot. It leaves the queue (in memory
 * now, in the database with the commit that starts its turn), so it never runs twice.
 */
export function startNextQueued(s: SessionState, env: SessionEnv): void {
  if (s.activity.phase !== 'idle' || s.queuePaused || s.queueRetry.holding || s.lifecycle !== 'open' || s.drainWaiters.length > 0) return;
  const item = s.queue.shift();
  if (item === undefined) return;
  const frame: TurnStartFrame = { type: 'turn.start', sid: s.sid, request_id: item.requestId, text: item.text, turn_id: item.turnId, ...(item.by === null ? {} : { by: item.by }), ...(item.traceContext === undefined ? {} : { trace_context: item.traceContext }), ...(item.content === undefined ? {} : { content: item.content }) };
  const ticketId = nextTicketId();
  s.activity = { phase: 'waiting', ticketId, frame, turnId: item.turnId, queued: item, steering: new SteeringInbox(), arrivedAt: item.queuedAt };
  tell(env.host, { kind: 'admit', ticket: { id: ticketId, person: personOf(item.by), sid: s.sid, session: env.self } });
}
