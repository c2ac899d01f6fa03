// The session actor: one per sid, a child of its shard. It owns the session's history, its
// running turn, its open server requests and its one-shot finalize latch.
import { randomBytes } from 'node:crypto';
import type { StoredSession, Work } from '../persistence/store.js';
import { encode } from '../persistence/codec.js';
import type { RespondFrame } from '../protocol/frames.js';
import type { RetainReason } from '../protocol/outbound.js';
import { rpcEvent } from '../protocol/rpc.js';
import type { DrainAck, FrameMsg, HostMsg, SessionDescription, SessionMsg, Settled } from './messages.js';
import { actorName, spawnActor, tell, type ActorContext, type AnyRef, type Ref } from './runtime.js';
import { spawnServerRequest } from './server-request.js';
import type { HostServices } from './services.js';
import { reloadTools, runControl } from './session-controls.js';
import { newSessionState, type SessionState } from './session-state.js';
import {
  ackDrainWaiters,
  beginTurn,
  finishTurn,
  interruptTurn,
  refuseWaitingTurn,
  requestTurn,
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
      init: () => newSessionState(sid, stored, services.clock.nowMs()),
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
      return s;
    case 'admission-refused':
      refuseWaitingTurn(s, msg.ticketId, env);
      return s;
    case 'turn-done':
      await finishTurn(s, msg.turnId, msg.reply, msg.error, env);
      return s;
    case 'activity-tick':
      sampleActivity(s, msg.turnId, env);
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
      drain(s, msg.replyTo);
      return s;
    case 'finalize':
    case 'retain':
      tell(msg.replyTo, settle(s, msg, env));
      return s;
    case 'describe':
      tell(msg.replyTo, describe(s, env));
      return s;
  }
}

async function onFrame(s: SessionState, msg: FrameMsg, env: SessionEnv): Promise<void> {
  const { writer } = env.services;
  const { frame, control } = msg;
  switch (frame.type) {
    case 'turn.start':
      await requestTurn(s, frame, msg.reservedTicket, env);
      return;
    case 'interrupt':
      interruptTurn(s, frame.request_id, env);
      return;
    case 'respond':
      relayRespond(s, frame, env);
      return;
    case 'reload_mcp':
      await reloadTools(s, frame, env);
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
    tell(request.ref, { kind: 'lock', respondRequestId: frame.request_id, questionId: params.questionId, answer: params.answer });
  } else {
    tell(request.ref, { kind: 'answer', respondRequestId: frame.request_id, error: params.error, result: params.result });
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
  const id = `srq-${randomBytes(6).toString('hex')}`;
  const params = { session_id: s.sid, ...msg.params };
  try {
    await store.commit((w) => w.openRequest({ id, sid: s.sid, turnId: turn.turnId, method: msg.method, paramsText: encode(params), bootId }));
  } catch (err) {
    log.error({ err, sid: s.sid }, 'could not store a server request');
    tell(msg.replyTo, null);
    return;
  }
  const ref = spawnServerRequest(
    { id, sid: s.sid, method: msg.method, params, timeoutMs: msg.timeoutMs, asker: msg.replyTo, session: ctx.self },
    env.services,
  );
  s.requests.set(id, { id, method: msg.method, ref, createdMs: clock.nowMs() });
  turn.lastEventNs = clock.hostNs();
  writer.write({ type: 'rpc', sid: s.sid, message: { jsonrpc: '2.0', id, method: msg.method, params } });
}

function drain(s: SessionState, replyTo: Ref<DrainAck>): void {
  s.drainWaiters.push(replyTo);
  ackDrainWaiters(s);
}

/** finalize or retain, for the shutdown flush; a session whose turn still runs can only be retained. */
function settle(s: SessionState, msg: Extract<SessionMsg, { kind: 'finalize' | 'retain' }>, env: SessionEnv): Settled {
  if (s.lifecycle === 'finalized') return { kind: 'settled', sid: s.sid, outcome: 'skipped', work: null };
  dropWaitingTurn(s, env);
  if (msg.kind === 'finalize' && s.activity.phase === 'idle') return finalize(s, msg.endReason);
  return retain(s, msg.kind === 'retain' ? msg.reason : 'drain_deadline', env);
}

/** Admission is closed: a turn still waiting for a slot will never start. */
function dropWaitingTurn(s: SessionState, env: SessionEnv): void {
  if (s.activity.phase !== 'waiting') return;
  tell(env.host, { kind: 'withdraw', ticketId: s.activity.ticketId });
  refuseWaitingTurn(s, s.activity.ticketId, env);
}

/** Spends the one-shot latch. */
function finalize(s: SessionState, endReason: string): Settled {
  s.lifecycle = 'finalized';
  const { sid } = s;
  const stored = s.row !== 'none';
  return { kind: 'settled', sid, outcome: 'finalized', work: stored ? (w) => w.finalizeSession(sid, endReason) : null };
}

/**
 * A laggard at the drain deadline: its partial tail is written and its open requests are
 * cancelled (reason `shutdown`), in the flush transaction; its latch stays unspent.
 */
function retain(s: SessionState, reason: RetainReason, env: SessionEnv): Settled {
  s.lifecycle = 'retained';
  const { sid } = s;
  const stored = s.row !== 'none';
  const requestIds = [...s.requests.keys()];
  for (const request of s.requests.values()) {
    env.services.writer.write({ type: 'rpc', sid, message: rpcEvent(sid, 'request.cancel', { id: request.id, method: request.method, reason: 'shutdown' }) });
    tell(request.ref, { kind: 'cancel', reason: 'shutdown', recorded: true });
  }
  const turn = s.activity.phase === 'running' ? s.activity.turn : undefined;
  const tail = turn ? turn.pending.splice(0) : [];
  const firstSeq = s.history.length;
  s.history.push(...tail);
  turn?.controller.abort();
  const work: Work = (w) => {
    for (const id of requestIds) w.closeRequest(id, 'cancelled', null, 'shutdown');
    if (turn) {
      w.appendMessages(sid, firstSeq, tail, turn.turnId);
      w.endTurn(turn.turnId, 'interrupted', reason);
    }
    if (stored) w.retainSession(sid, reason);
  };
  return { kind: 'settled', sid, outcome: 'retained', work };
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
    message_count: s.history.length,
    history_version: s.historyVersion,
    open_requests: [...s.requests.values()].map((r) => ({ id: r.id, sid: s.sid, method: r.method, age_ms: Math.round(now - r.createdMs) })),
    idle_ms: activity.phase === 'idle' ? Math.round(now - s.lastActiveMs) : 0,
  };
}

/** The session actor stopped (it crashed): its turn can never end normally, so say so now. */
function abandon(s: SessionState, services: HostServices, host: Ref<HostMsg>): void {
  tell(host, { kind: 'session-count', delta: -1 });
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
