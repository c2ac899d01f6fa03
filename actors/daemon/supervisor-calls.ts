// What clients ask of the host, as the supervisor carries it: checked first (host state, route
// class, a turn already running), then written as a frame and answered from the host's reply,
// from a timeout, or, when the host dies, from the crash.
import { uniqueId } from '../../protocol/unique-ids.js';
import { ErrorCodes, RpcError } from '../../protocol/client-rpc.js';
import { isRecord } from '../../protocol/fields.js';
import type { RpcErrorObject } from '../../protocol/rpc.js';
import { controlClass } from '../host/routes.js';
import { tell, type ActorContext, type Ref } from '../runtime.js';
import type { PendingSubmit, ReplyEntry, SupervisorState, SupervisorWiring } from './supervisor-state.js';
import type { CallReply, HostCall, HostFrameIn, SupervisorMsg } from './supervisor-messages.js';


/** How long a call waits for a starting or restarting host before it gets 5019. */
export const READY_WAIT_MS = 15_000;

/** Null when the host can take the call now, 'wait' while it comes up, else the refusal. */
function unavailable(s: SupervisorState): RpcError | 'wait' | null {
  switch (s.phase) {
    case 'running':
      return null;
    case 'starting':
    case 'restarting':
      return 'wait';
    case 'failed':
      return RpcError.hostUnavailable('crash_loop');
    case 'stopping':
    case 'stopped':
      return new RpcError(ErrorCodes.shuttingDown, 'the daemon is shutting down');
  }
}

const fail = (replyTo: Ref<CallReply>, error: RpcError): void => tell(replyTo, { ok: false, error: error.toJson() });

export function answerCall(s: SupervisorState, call: HostCall, replyTo: Ref<CallReply>, ctx: ActorContext<SupervisorMsg>, wiring: SupervisorWiring): void {
  const refused = unavailable(s);
  if (refused === 'wait') return park(s, call, replyTo, ctx, wiring);
  if (refused) return fail(replyTo, refused);
  const child = s.child!;
  const requestId = `sv-${++s.nextRequest}`;
  const timeouts = wiring.config;
  switch (call.op) {
    case 'turn': {
      // The host decides (PROTOCOL.md §2.1): it runs, queues, steers or refuses, and says which.
      const turnId = uniqueId('turn');
      const frame = {
        type: 'turn.start',
        sid: call.sid,
        request_id: requestId,
        turn_id: turnId,
        text: call.text,
        ...(call.content === undefined ? {} : { content: call.content }),
        on_busy: call.onBusy,
        ...(call.clientMessageId === undefined ? {} : { client_message_id: call.clientMessageId }),
        ...(call.cwd ? { cwd: call.cwd } : {}),
        ...(call.by === undefined ? {} : { by: call.by }),
        ...(call.traceContext === undefined ? {} : { trace_context: call.traceContext }),
      };
      s.submits.set(requestId, { sid: call.sid, turnId, frame, replyTo, resent: false });
      child.send(frame);
      return;
    }
    case 'interrupt':
      child.send({
        type: 'interrupt',
        sid: call.sid,
        request_id: requestId,
        ...(call.turnId === undefined ? {} : { turn_id: call.turnId }),
        ...(call.keepQueue ? { keep_queue: true } : {}),
      });
      return waitReply(s, requestId, { replyTo, kind: 'interrupt', what: 'session.interrupt', sid: call.sid, timeoutMs: timeouts.controlTimeoutMs }, ctx, wiring);
    case 'queue':
      child.send({
        type: 'queue',
        sid: call.sid,
        request_id: requestId,
        op: call.queueOp,
        ...(call.queueId === undefined ? {} : { queue_id: call.queueId }),
        ...(call.text === undefined ? {} : { text: call.text }),
      });
      return waitReply(s, requestId, { replyTo, kind: 'queue', what: `session.queue ${call.queueOp}`, sid: call.sid, timeoutMs: timeouts.controlTimeoutMs }, ctx, wiring);
    case 'control': {
      const cls = controlClass(call.route);
      if (cls === undefined || cls === 'turn-path') return fail(replyTo, new RpcError(ErrorCodes.methodNotFound, `method not found: ${call.route}`));
      if (cls === 'idle-gated' && s.running.has(call.sid)) return fail(replyTo, new RpcError(ErrorCodes.sessionBusy, 'session busy: a turn is running'));
      child.send(
        call.route === 'reload.mcp'
          ? { type: 'reload_mcp', sid: call.sid, request_id: requestId }
          : { type: 'control', sid: call.sid, request_id: requestId, route_name: call.route, params: call.params },
      );
      return waitReply(s, requestId, { replyTo, kind: 'control', what: call.route, sid: call.sid, timeoutMs: timeouts.controlTimeoutMs }, ctx, wiring);
    }
    case 'create':
      child.send({
        type: 'session.create',
        sid: call.sid,
        request_id: requestId,
        ...(call.cwd === undefined ? {} : { cwd: call.cwd }),
        ...(call.agent === undefined ? {} : { agent: call.agent }),
        ...(call.model === undefined ? {} : { model: call.model }),
      });
      return waitReply(s, requestId, { replyTo, kind: 'control', what: 'session.create', sid: call.sid, timeoutMs: timeouts.controlTimeoutMs }, ctx, wiring);
    case 'respond':
      child.send({ type: 'respond', sid: call.sid, request_id: requestId, params: call.params });
      return waitReply(s, requestId, { replyTo, kind: 'respond', what: 'respond', sid: call.sid, timeoutMs: timeouts.respondTimeoutMs }, ctx, wiring);
    case 'debug':
      child.send({ type: 'debug', request_id: requestId, what: call.what });
      return waitReply(s, requestId, { replyTo, kind: 'debug', what: `debug ${call.what}`, sid: null, timeoutMs: timeouts.controlTimeoutMs }, ctx, wiring);
    case 'delete':
      child.send({ type: 'session.delete', sid: call.sid, request_id: requestId, ...(call.interrupt ? { interrupt: true } : {}), by: call.by });
      // A delete that interrupts waits for the turn's agent to return: as long as a control may take.
      return waitReply(s, requestId, { replyTo, kind: 'control', what: 'session.delete', sid: call.sid, timeoutMs: timeouts.controlTimeoutMs }, ctx, wiring);
    case 'agents':
      child.send(call.reload ? { type: 'agents', request_id: requestId, op: 'reload', env: call.env } : { type: 'agents', request_id: requestId, op: 'list' });
      return waitReply(s, requestId, { replyTo, kind: 'agents', what: call.reload ? 'agents reload' : 'agents list', sid: null, timeoutMs: timeouts.controlTimeoutMs }, ctx, wiring);
  }
}

function park(s: SupervisorState, call: HostCall, replyTo: Ref<CallReply>, ctx: ActorContext<SupervisorMsg>, wiring: SupervisorWiring): void {
  const id = ++s.nextParked;
  const cancelTimer = wiring.config.clock.after(READY_WAIT_MS, () => tell(ctx.self, { kind: 'parked-timeout', id }));
  s.parkedCalls.set(id, { call, replyTo, cancelTimer });
}

/** The host said hello, failed for good, or the daemon stops: every parked call is answered now, in arrival order. */
export function releaseParkedCalls(s: SupervisorState, ctx: ActorContext<SupervisorMsg>, wiring: SupervisorWiring): void {
  if (s.phase === 'running' && s.child !== null) {
    for (const submit of s.submits.values()) {
      submit.resent = true;
      s.child.send(submit.frame);
    }
  }
  const parked = [...s.parkedCalls.values()];
  s.parkedCalls.clear();
  for (const { call, replyTo, cancelTimer } of parked) {
    cancelTimer();
    answerCall(s, call, replyTo, ctx, wiring);
  }
}

/** A parked call's bound passed before the host came up. */
export function expireParkedCall(s: SupervisorState, id: number): void {
  const parked = s.parkedCalls.get(id);
  if (parked === undefined) return;
  s.parkedCalls.delete(id);
  fail(parked.replyTo, RpcError.hostUnavailable(s.phase === 'restarting' ? 'restarting' : 'starting'));
}

function waitReply(s: SupervisorState, requestId: string, entry: ReplyEntry, ctx: ActorContext<SupervisorMsg>, wiring: SupervisorWiring): void {
  s.replies.wait(requestId, entry);
  // Not cancelled when the reply comes: a timeout that finds nothing waiting does nothing.
  wiring.config.clock.after(entry.timeoutMs, () => tell(ctx.self, { kind: 'reply-timeout', requestId }));
}

/** A host reply: to its waiter, or after a timeout to its late handler, exactly once. */
export function settleReply(s: SupervisorState, frame: HostFrameIn, wiring: SupervisorWiring): void {
  const settled = s.replies.settle(String(frame['request_id']));
  if (settled === null) return;
  if (settled.to === 'waiter') tell(settled.entry.replyTo, toCallReply(frame));
  else runLateHandler(settled.entry, frame, wiring);
}

function hostError(message: string): RpcError {
  if (message === 'session busy') return new RpcError(ErrorCodes.sessionBusy, message);
  if (message === 'session not found') return new RpcError(ErrorCodes.sessionNotFound, message);
  if (/^session \S+ was deleted/.test(message)) return new RpcError(ErrorCodes.invalidParams, `invalid params: ${message}`);
  if (message.startsWith('unclassified route')) return new RpcError(ErrorCodes.methodNotFound, message);
  return new RpcError(ErrorCodes.internal, message);
}

function toCallReply(frame: HostFrameIn): CallReply {
  switch (frame.type) {
    case 'interrupt.ack':
      return { ok: true, value: { applied: frame['applied'] === true, ...(frame['reason'] === 'not_current' ? { reason: 'not_current' } : {}) } };
    case 'control.ack': {
      const result = frame['result'];
      const meta = { session_key: frame['session_key'], history_version: frame['history_version'], message_count: frame['message_count'] };
      return { ok: true, value: isRecord(result) ? { ...result, ...meta } : { result, ...meta } };
    }
    case 'reload_mcp.ack':
    case 'respond.ack': {
      const response = isRecord(frame['response']) ? frame['response'] : {};
      if (isRecord(response['error'])) return { ok: false, error: response['error'] as unknown as RpcErrorObject };
      return { ok: true, value: response['result'] ?? null };
    }
    case 'debug.result':
    case 'agents.result':
      return { ok: true, value: frame['result'] };
    case 'agents.error':
      return { ok: false, error: new RpcError(ErrorCodes.invalidParams, String(frame['message'])).toJson() };
    case 'queue.ack':
      return { ok: true, value: { revision: frame['revision'], items: frame['items'] } };
    case 'queue.error':
      return { ok: false, error: new RpcError(Number(frame['code'] ?? ErrorCodes.internal), String(frame['message'])).toJson() };
    default:
      return { ok: false, error: hostError(String(frame['message'] ?? `unexpected ${frame.type}`)).toJson() };
  }
}

/** A control finished after its caller stopped waiting: the session's clients hear of it once. */
function runLateHandler(entry: ReplyEntry, frame: HostFrameIn, wiring: SupervisorWiring): void {
  wiring.config.log.info({ what: entry.what, type: frame.type }, 'late host reply handed to its late handler');
  if (entry.kind !== 'control' || entry.sid === null) return;
  const failed = frame.type === 'control.error' || frame.type === 'error';
  tell(wiring.gateway, {
    kind: 'event',
    sid: entry.sid,
    type: 'status.update',
    payload: {
      kind: failed ? 'control.failed' : 'control.done',
      text: failed ? `${entry.what} failed after its caller stopped waiting: ${String(frame['message'])}` : `${entry.what} finished after its caller stopped waiting`,
    },
  });
}

/**
 * The host is gone (crashed, or stopped): every running turn ends with an error event and a
 * turn.error, every waiter gets 5019, every late handler a control.error. The maps are swapped
 * out before anything is settled, so nothing settled here can be settled twice. With
 * `keepUnstarted` (a crash the supervisor recovers from), a submit the dead host never committed
 * stays pending, to be sent to the next host: a prompt submitted as the host died runs once it is
 * back. Its turn id and client_message_id are kept, so a host that had committed it answers
 * turn.duplicate instead of running it twice. Queued prompts are the host's: they wait in its
 * database for the next host.
 */
export function failEverything(s: SupervisorState, message: string, reason: 'crash' | 'shutting_down', wiring: SupervisorWiring, keepUnstarted = false): void {
  const running = s.running;
  const submits = s.submits;
  s.running = new Map();
  s.submits = new Map();
  const endTurn = (sid: string, turnId: string, queueId?: string): void => {
    tell(wiring.gateway, { kind: 'event', sid, type: 'error', payload: { message, reason } });
    tell(wiring.gateway, { kind: 'event', sid, type: 'turn.error', payload: { turn_id: turnId, ...(queueId === undefined ? {} : { queue_id: queueId }), message, reason } });
    tell(wiring.gateway, { kind: 'turn-ended', sid });
  };
  for (const [sid, turn] of running) endTurn(sid, turn.turnId, turn.queueId);
  const lost = reason === 'crash' ? RpcError.hostUnavailable('crash') : new RpcError(ErrorCodes.shuttingDown, message);
  for (const [requestId, submit] of submits) {
    if (keepUnstarted) s.submits.set(requestId, submit);
    else if (submit.replyTo !== null) fail(submit.replyTo, lost);
    else endTurn(submit.sid, submit.turnId); // answered `streaming`, never started: its turn ends here
  }
  const { waiting, late } = s.replies.failAll();
  for (const entry of waiting) fail(entry.replyTo, lost);
  for (const entry of late) runLateHandler(entry, { type: 'control.error', request_id: '', message }, wiring);
}

/** Lets the host run a session's stored queue (PROTOCOL.md §1.1 `queue` resume). */
export function resumeQueue(s: SupervisorState, sid: string): void {
  s.child?.send({ type: 'queue', sid, request_id: `sv-${++s.nextRequest}`, op: 'resume' });
}

/**
 * The host's word on a submit or a turn: the submitter's answer comes from the first of them;
 * turn.started and its end keep the running-turn map that host.status and the crash path read.
 */
export function onTurnFrame(s: SupervisorState, frame: HostFrameIn, wiring: SupervisorWiring): void {
  const requestId = String(frame['request_id']);
  const sid = String(frame['sid']);
  const submit = s.submits.get(requestId);
  if (submit !== undefined && submit.resent && frame.type === 'turn.duplicate' && frame['state'] !== 'queued') endLostTurn(submit, wiring);
  if (submit !== undefined && submit.replyTo !== null) {
    const answer = submitAnswer(frame, submit);
    if (answer !== null) {
      tell(submit.replyTo, answer);
      submit.replyTo = null;
    }
  }
  switch (frame.type) {
    case 'turn.accepted':
      return; // answered; still uncommitted until turn.started
    case 'turn.started':
      s.running.set(sid, { requestId, turnId: String(frame['turn_id']), ...(typeof frame['queue_id'] === 'string' ? { queueId: frame['queue_id'] } : {}) });
      break;
    case 'turn.end':
    case 'turn.error':
      if (s.running.get(sid)?.requestId === requestId) s.running.delete(sid);
      break;
  }
  s.submits.delete(requestId);
}

/**
 * A submit sent again to a new host, which says the dead one had already started it: its
 * turn.started was still in the pipe when the host died (a process's exit can be seen before
 * the last of its output). That turn died with the host; its clients hear so, as for any turn
 * the crash ended.
 */
function endLostTurn(submit: PendingSubmit, wiring: SupervisorWiring): void {
  const message = 'the compute host died during the turn';
  tell(wiring.gateway, { kind: 'event', sid: submit.sid, type: 'turn.error', payload: { turn_id: submit.turnId, message, reason: 'crash' } });
  tell(wiring.gateway, { kind: 'turn-ended', sid: submit.sid });
}

function submitAnswer(frame: HostFrameIn, submit: PendingSubmit): CallReply | null {
  const turnId = String(frame['turn_id'] ?? submit.turnId);
  switch (frame.type) {
    case 'turn.accepted':
    case 'turn.started':
      return { ok: true, value: { status: 'streaming', turn_id: turnId } };
    case 'turn.queued':
      return { ok: true, value: { status: 'queued', queue_id: frame['queue_id'], position: frame['position'], turn_id: turnId } };
    case 'turn.steered':
      return { ok: true, value: { status: 'steered', turn_id: frame['turn_id'] } };
    case 'turn.duplicate':
      return { ok: true, value: submit.resent ? resentAnswer(frame, submit) : duplicateAnswer(frame) };
    case 'turn.end':
      return { ok: true, value: { status: 'streaming', turn_id: turnId } };
    case 'turn.error':
      return { ok: false, error: turnError(frame).toJson() };
    default:
      return null;
  }
}

function duplicateAnswer(frame: HostFrameIn): Record<string, unknown> {
  const { state, turn_id, queue_id } = frame;
  return { status: 'duplicate', state, ...(turn_id === undefined ? {} : { turn_id }), ...(queue_id === undefined ? {} : { queue_id }) };
}

/** The dead host had committed a submit sent again: its submitter hears what the dead host would have said. */
function resentAnswer(frame: HostFrameIn, submit: PendingSubmit): Record<string, unknown> {
  if (frame['state'] === 'queued') return { status: 'queued', queue_id: frame['queue_id'], turn_id: submit.turnId };
  return { status: 'streaming', turn_id: submit.turnId };
}

/** A host's turn.error as the client's error; busy because another node owns the session names it (`data.node_id`), a budget says which (`data`). */
function turnError(frame: HostFrameIn): RpcError {
  const message = String(frame['message']);
  const nodeId = frame['node_id'];
  switch (String(frame['reason'] ?? 'exception')) {
    case 'budget':
      return new RpcError(ErrorCodes.budgetExceeded, message, frame['budget']);
    case 'busy':
      return new RpcError(ErrorCodes.sessionBusy, message, typeof nodeId === 'string' ? { node_id: nodeId } : undefined);
    case 'shutting_down':
      return new RpcError(ErrorCodes.shuttingDown, message);
    case 'invalid':
      return new RpcError(ErrorCodes.invalidParams, message);
    default:
      return new RpcError(ErrorCodes.internal, message);
  }
}
