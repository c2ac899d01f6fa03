// The session actor: one per sid, a child of its shard. It owns the session's history, its
// running turn, its open server requests and its one-shot finalize latch.
import { uniqueId } from '../../protocol/unique-ids.js';
import type { StoredSession, Takeover } from '../../persistence/store.js';
import { encode } from '../../persistence/codec.js';
import type { RespondFrame } from '../../protocol/frames.js';
import { rpcEvent, type ServerRequestMethod } from '../../protocol/rpc.js';
import type { FrameMsg, HostMsg, SessionDescription, SessionMsg, Settled } from './messages.js';
import { nextTicketId } from './turn-admission.js';
import { actorName, spawnActor, tell, type ActorContext, type AnyRef, type Ref } from '../runtime.js';
import { spawnServerRequest } from './server-request.js';
import type { HostServices } from './services.js';
import { compressDuringTurn, keepAgentSession, reloadTools, runControl, saveDuringTurn, storeNewSession } from './session-controls.js';
import { newSessionState, type SessionState } from './session-state.js';
import { interrupt, receiveTurnStart, requeue, runQueueOp, startNextQueued } from './session-queue.js';
import { retain } from './session-lifecycle.js';
import { deleteSession } from './session-delete.js';
import {
  ackDrainWaiters,
  beginTurn,
  dropWaitingTurn,
  finishTurn,
  refuseWaitingTurn,
  sampleActivity,
  type SessionEnv,
} from './session-turn.js';

export function spawnSession(
  shard: AnyRef,
  sid: string,
  stored: StoredSession | undefined,
  services: HostServices,
  host: Ref<HostMsg>,
): Ref<SessionMsg> {
  const log = services.log.child({ sid });
  return spawnActor<SessionState, SessionMsg>(
    shard,
    actorName(sid),
    (state, msg, ctx) => handle(state, msg, { services, host, self: ctx.self }, ctx),
    {
      log,
      onCrash: 'escalate',
      init: () => newSessionState(sid, stored, services.clock.nowMs(), services.agents.defaultName),
      afterStop: (state) => abandon(state, services, host),
    },
  );
}

async function handle(s: SessionState, msg: SessionMsg, env: SessionEnv, ctx: ActorContext<SessionMsg>): Promise<SessionState> {
  switch (msg.kind) {
    case 'frame':
      await onFrame(s, msg, env);
      return s;
    case 'slot':
      await beginTurn(s, msg.ticketId, env);
      startNextQueued(s, env); // when the start could not be stored, the queue goes on
      return s;
    case 'admission-refused':
      refuseWaitingTurn(s, msg.ticketId, env);
      return s;
    case 'turn-done':
      await requeue(s, await finishTurn(s, msg.turnId, msg.result, msg.error, env), env);
      if (s.deleting !== null) await deleteSession(s, s.deleting, env);
      else startNextQueued(s, env);
      return s;
    case 'save-tail':
      tell(msg.replyTo, await saveDuringTurn(s, msg.turnId, env));
      return s;
    case 'keep-agent-session':
      tell(msg.replyTo, await keepAgentSession(s, msg.turnId, msg.agentSessionId, env));
      return s;
    case 'compress-history':
      tell(msg.replyTo, await compressDuringTurn(s, msg.turnId, msg.summary, env));
      return s;
    case 'activity-tick':
      sampleActivity(s, msg.turnId, env);
      return s;
    case 'queue-retry':
      s.queueRetry.release();
      startNextQueued(s, env);
      return s;
    case 'taken-over':
      announceTakeover(s, msg.takeover, env.services);
      startNextQueued(s, env);
      return s;
    case 'open-request':
      await openRequest(s, msg, env, ctx);
      return s;
    case 'request-closed': {
      const request = s.requests.get(msg.id);
      s.requests.delete(msg.id);
      if (request) tell(request.ref, { kind: 'close' });
      return s;
    }
    case 'drain':
      drain(s, msg.replyTo, msg.endReason);
      return s;
    case 'retain':
      dropWaitingTurn(s, env);
      tell(msg.replyTo, retain(s, msg.reason, env.services));
      return s;
    case 'describe':
      tell(msg.replyTo, describe(s, env));
      return s;
  }
}

/**
 * The turn that ran on the dead node ends for its clients (`node_lost`), and its questions are
 * withdrawn, before anything this node does with the session; its queue then goes on, since a
 * client named the session to bring it here.
 */
function announceTakeover(s: SessionState, takeover: Takeover, services: HostServices): void {
  const message = `node ${takeover.fromNode}, which ran the turn, was lost; this node took the session over`;
  services.tracing?.endLost(takeover.lostTurns, 'node_lost');
  for (const { turnId } of takeover.lostTurns) {
    services.writer.write({ type: 'turn.error', sid: s.sid, request_id: turnId, turn_id: turnId, message, reason: 'node_lost' });
  }
  for (const request of takeover.expiredRequests) {
    services.writer.write({ type: 'rpc', sid: s.sid, message: rpcEvent(s.sid, 'request.cancel', { id: request.id, method: request.method as ServerRequestMethod, reason: 'node_lost' }) });
  }
}

async function onFrame(s: SessionState, msg: FrameMsg, env: SessionEnv): Promise<void> {
  const { writer } = env.services;
  const { frame, control } = msg;
  switch (frame.type) {
    case 'turn.start':
      await receiveTurnStart(s, frame, msg.ticket ?? { id: nextTicketId(), reserved: false }, env);
      return;
    case 'interrupt':
      await interrupt(s, frame, env);
      return;
    case 'queue':
      await runQueueOp(s, frame, env);
      return;
    case 'respond':
      relayRespond(s, frame, env);
      return;
    case 'reload_mcp':
      await reloadTools(s, frame, env);
      return;
    case 'session.create':
      await storeNewSession(s, frame, env);
      return;
    case 'session.delete':
      await deleteSession(s, frame, env);
      return;
    case 'control':
      if (control === undefined) {
        writer.write({ type: 'control.error', sid: s.sid, request_id: frame.request_id, message: `unclassified route: ${frame.route_name}` });
      } else if (s.activity.phase !== 'idle' && control.route !== 'session.save' && control.route !== 'reload.mcp') {
        writer.write({ type: 'control.error', sid: s.sid, request_id: frame.request_id, message: 'session busy' });
      } else {
        await runControl(s, frame, control, env);
      }
      return;
  }
}

/** A client's answer or lock goes to the open request it names; anything else has expired. */
function relayRespond(s: SessionState, frame: RespondFrame, env: SessionEnv): void {
  const { params } = frame;
  const requestId = params.kind === 'lock' ? params.requestId : typeof params.id === 'string' ? params.id : undefined;
  const request = requestId === undefined ? undefined : s.requests.get(requestId);
  if (request === undefined) {
    env.services.writer.write({
      type: 'respond.ack',
      sid: s.sid,
      request_id: frame.request_id,
      response: { jsonrpc: '2.0', id: frame.request_id, result: { status: 'expired' } },
    });
    return;
  }
  if (params.kind === 'lock') {
    tell(request.ref, { kind: 'lock', respondRequestId: frame.request_id, questionId: params.questionId, answer: params.answer, by: params.by ?? null });
  } else {
    tell(request.ref, { kind: 'answer', respondRequestId: frame.request_id, error: params.error, result: params.result, by: params.by ?? null });
  }
}

async function openRequest(
  s: SessionState,
  msg: Extract<SessionMsg, { kind: 'open-request' }>,
  env: SessionEnv,
  ctx: ActorContext<SessionMsg>,
): Promise<void> {
  const { store, writer, bootId, clock, log } = env.services;
  const turn = s.activity.phase === 'running' ? s.activity.turn : undefined;
  if (turn === undefined || turn.turnId !== msg.turnId || turn.finished || turn.controller.signal.aborted || s.lifecycle !== 'open') {
    tell(msg.replyTo, null);
    return;
  }
  const id = uniqueId('srq');
  const params = { session_id: s.sid, ...msg.params };
  try {
    await store.commit((w) => {
      w.openRequest({ id, sid: s.sid, turnId: turn.turnId, method: msg.method, paramsText: encode(params), bootId });
      if (env.services.webhookEvents.has('request.open')) w.queueWebhook(s.sid, 'request.open', id);
    });
  } catch (err) {
    log.error({ err, sid: s.sid }, 'could not store a server request');
    tell(msg.replyTo, null);
    return;
  }
  const ref = spawnServerRequest(
    { id, sid: s.sid, method: msg.method, params, timeoutMs: msg.timeoutMs, asker: msg.replyTo, session: ctx.self, span: turn.span?.request(msg.method, id) ?? null },
    env.services,
  );
  s.requests.set(id, { id, method: msg.method, ref, createdMs: clock.nowMs() });
  turn.lastEventNs = clock.hostNs();
  writer.write({ type: 'rpc', sid: s.sid, message: { jsonrpc: '2.0', id, method: msg.method, params } });
}

function drain(s: SessionState, replyTo: Ref<Settled>, endReason: string): void {
  s.drainWaiters.push({ replyTo, endReason });
  ackDrainWaiters(s);
}

function describe(s: SessionState, env: SessionEnv): SessionDescription {
  const now = env.services.clock.nowMs();
  const activity = s.activity;
  return {
    sid: s.sid,
    session_key: s.sessionKey,
    phase: activity.phase,
    lifecycle: s.lifecycle,
    turn_id: activity.phase === 'running' ? activity.turn.turnId : activity.phase === 'waiting' ? activity.turnId : null,
    message_count: s.messageCount,
    history_version: s.historyVersion,
    open_requests: [...s.requests.values()].map((r) => ({ id: r.id, sid: s.sid, method: r.method, age_ms: Math.round(now - r.createdMs) })),
    idle_ms: activity.phase === 'idle' ? Math.round(now - s.lastActiveMs) : 0,
    queued: s.queue.length,
    queue_held: s.queuePaused ? 'paused' : s.queueRetry.holding ? 'retry' : null,
  };
}

/** The session actor stopped (it crashed): its turn can never end normally, so say so now. */
function abandon(s: SessionState, services: HostServices, host: Ref<HostMsg>): void {
  tell(host, { kind: 'session-count', delta: -1 });
  s.queueRetry.release();
  const activity = s.activity;
  if (activity.phase === 'idle') return;
  const ticketId = activity.phase === 'running' ? activity.turn.ticketId : activity.ticketId;
  const requestId = activity.phase === 'running' ? activity.turn.requestId : activity.frame.request_id;
  if (activity.phase === 'running') {
    activity.turn.finished = true;
    activity.turn.cancelActivityTimer();
    activity.turn.controller.abort();
  }
  tell(host, { kind: activity.phase === 'running' ? 'release' : 'withdraw', ticketId });
  services.writer.write({ type: 'turn.error', sid: s.sid, request_id: requestId, message: 'session actor crashed', reason: 'exception' });
}
