// The gateway actor: the client connections, which clients are attached to which session, the
// session's open server requests as the clients saw them, and its recent events. Every message
// and event of a session goes to all of its attached clients, in the order the host wrote them;
// each event is numbered per session (`params.seq`) and kept for a resuming client. A session's
// viewers (PROTOCOL.md §5.6) are told a server request is open (`request.open`), never asked it.
import type { Logger } from 'pino';
import { resultLine } from '../../protocol/client-rpc.js';
import type { QueueDeltaFrame } from '../../protocol/outbound.js';
import { queueParamsOpen } from '../../protocol/queue-items-json.js';
import { spawnActor, tell, type Ref, type SystemRef } from '../runtime.js';
import { EventRings, type EventLine } from './event-rings.js';
import { QueueMirrors } from './queue-mirrors.js';
import type { OutputGate } from './output-gate.js';
import type { ClientSink, GatewayMsg } from './supervisor-messages.js';

interface OpenRequest {
  sid: string;
  json: string;
}

interface GatewayState {
  clients: Map<number, ClientSink>;
  attached: Map<string, Set<number>>;
  /** The attached clients who may only view the session, by session. */
  viewers: Map<string, Set<number>>;
  requests: Map<string, OpenRequest>;
  events: EventRings;
  queues: QueueMirrors;
  observe: TurnObserver;
}

/** Sees every turn event the supervisor makes (turn.started, turn.end, turn.error): the metrics count them. */
export type TurnObserver = (type: string, payload: Record<string, unknown>) => void;

export function spawnGateway(system: SystemRef, log: Logger, gate: OutputGate, observe: TurnObserver = () => {}): Ref<GatewayMsg> {
  return spawnActor<GatewayState, GatewayMsg>(system, 'gateway', (state, msg) => {
    const next = handle(state, msg);
    if (msg.kind === 'batch') gate.handled();
    return next;
  }, {
    log: log.child({ actor: 'gateway' }),
    init: () => ({ clients: new Map(), attached: new Map(), viewers: new Map(), requests: new Map(), events: new EventRings(), queues: new QueueMirrors(), observe }),
  });
}

function handle(state: GatewayState, msg: GatewayMsg): GatewayState {
  switch (msg.kind) {
    case 'client-open':
      state.clients.set(msg.sink.id, msg.sink);
      return state;
    case 'client-closed':
      state.clients.delete(msg.clientId);
      for (const ids of state.attached.values()) ids.delete(msg.clientId);
      for (const ids of state.viewers.values()) ids.delete(msg.clientId);
      return state;
    case 'attach':
      attach(state, msg.sid, msg.clientId, msg.viewer === true);
      return state;
    case 'count-open-requests':
      tell(msg.replyTo, state.requests.size);
      return state;
    case 'peek':
      tell(msg.replyTo, { last_seq: state.events.lastSeq(msg.sid), open_requests: openRequests(state, msg.sid) });
      return state;
    case 'resume':
      resume(state, msg);
      return state;
    case 'session-message':
      if (msg.request) state.requests.set(msg.request.id, { sid: msg.sid, json: msg.json });
      if (msg.cancelled) state.requests.delete(msg.cancelled);
      if (msg.eventParams !== undefined) deliverEvent(state, msg.sid, msg.eventParams);
      else if (msg.request) deliverRequest(state, msg.sid, msg.json);
      else deliver(state, msg.sid, `${msg.json}\n`);
      return state;
    case 'event':
      state.observe(msg.type, msg.payload as Record<string, unknown>);
      deliverEvent(state, msg.sid, JSON.stringify({ type: msg.type, session_id: msg.sid, payload: msg.payload }));
      return state;
    case 'turn-ended':
      // A server request lives within its turn: none is open once the turn has ended.
      for (const [id, request] of state.requests) if (request.sid === msg.sid) state.requests.delete(id);
      return state;
    case 'request-closed':
      state.requests.delete(msg.requestId);
      return state;
    case 'session-deleted':
      state.events.drop(msg.sid);
      state.attached.delete(msg.sid);
      state.viewers.delete(msg.sid);
      for (const [id, request] of state.requests) if (request.sid === msg.sid) state.requests.delete(id);
      return state;
    case 'request-session':
      tell(msg.replyTo, state.requests.get(msg.requestId)?.sid ?? null);
      return state;
    case 'queue-delta':
      deliverQueueEvent(state, msg.delta, state.queues.apply(msg.delta));
      return state;
    case 'host-hello':
      state.queues.clear();
      return state;
    case 'batch':
      for (const message of msg.messages) handle(state, message);
      return state;
    case 'host-ready':
      for (const recovered of msg.recovered) {
        const text = `session recovered after ${recovered.reason === 'crash' ? 'a host crash' : 'a shutdown that outlasted its turn'}`;
        deliverEvent(state, recovered.sid, JSON.stringify({ type: 'status.update', session_id: recovered.sid, payload: { kind: 'recovered', text, reason: recovered.reason } }));
      }
      return state;
  }
}

function requestsOf(state: GatewayState, sid: string): OpenRequest[] {
  return [...state.requests.values()].filter((request) => request.sid === sid);
}

/** The session's open server requests as the clients were sent them. */
function openRequests(state: GatewayState, sid: string): unknown[] {
  return requestsOf(state, sid).map((request) => JSON.parse(request.json) as unknown);
}

function attach(state: GatewayState, sid: string, clientId: number, viewer: boolean): void {
  const ids = state.attached.get(sid) ?? new Set<number>();
  ids.add(clientId);
  state.attached.set(sid, ids);
  const viewers = state.viewers.get(sid);
  if (viewer) state.viewers.set(sid, (viewers ?? new Set<number>()).add(clientId));
  else viewers?.delete(clientId);
}

/** A server request goes to those who may answer it; a viewer is told of it, without the means to answer. */
function deliverRequest(state: GatewayState, sid: string, json: string): void {
  const ids = state.attached.get(sid);
  if (ids === undefined) return;
  const viewers = state.viewers.get(sid);
  const asked = `${json}\n`;
  for (const id of ids) state.clients.get(id)?.write(viewers?.has(id) === true ? requestOpenLine(sid, json) : asked);
}

/** `request.open` for a viewer: the question and its id, as an event that is not kept (it is the request's, not the session's). */
function requestOpenLine(sid: string, json: string): string {
  const request = JSON.parse(json) as { id?: unknown; method?: unknown; params?: unknown };
  const payload = { request_id: request.id, method: request.method, params: request.params };
  return `${JSON.stringify({ jsonrpc: '2.0', method: 'event', params: { type: 'request.open', session_id: sid, payload } })}\n`;
}

/** Numbers the event (its params' JSON text gains `seq`), keeps it, and sends it to the attached clients. */
function deliverEvent(state: GatewayState, sid: string, paramsJson: string): void {
  const open = paramsJson === '{}' ? '{' : `${paramsJson.slice(0, -1)},`;
  const line = state.events.record(sid, (seq) => `{"jsonrpc":"2.0","method":"event","params":${open}"seq":${seq}}}\n`);
  deliver(state, sid, line);
}

/**
 * A `session.queue` event made from the session's queue copy: bytes from end to end, since each
 * carries the whole queue (2,000 events of 50 KB for 1,000 queued prompts) and as text they were
 * most of the daemon's garbage. The same params, in the same key order, as deliverEvent's.
 */
function deliverQueueEvent(state: GatewayState, delta: QueueDeltaFrame, items: Buffer): void {
  const head = Buffer.from(`{"jsonrpc":"2.0","method":"event","params":${queueParamsOpen(delta.sid, delta.revision)}`);
  const line = state.events.record(delta.sid, (seq) => Buffer.concat([head, items, Buffer.from(`]},"seq":${seq}}}\n`)]));
  deliver(state, delta.sid, line);
}

/**
 * One actor message, so no live event can fall between them: the answer, then every kept event
 * after `afterSeq`, then the session's open server requests again; from then on the client is
 * attached and gets what comes next.
 */
function resume(state: GatewayState, msg: Extract<GatewayMsg, { kind: 'resume' }>): void {
  const sink = state.clients.get(msg.clientId);
  if (sink === undefined) return; // gone while its resume was on the way
  const open = requestsOf(state, msg.sid);
  const openParsed = openRequests(state, msg.sid);
  const viewer = msg.viewer === true;
  attach(state, msg.sid, msg.clientId, viewer);
  if (msg.afterSeq === null) {
    sink.write(resultLine(msg.rpcId, { ...msg.result, open_requests: openParsed, last_seq: state.events.lastSeq(msg.sid) }));
    return;
  }
  const replay = state.events.since(msg.sid, msg.afterSeq);
  sink.write(
    resultLine(msg.rpcId, {
      ...msg.result,
      open_requests: openParsed,
      last_seq: replay.lastSeq,
      replay: replay.firstSeq === undefined ? 'complete' : 'partial',
      ...(replay.firstSeq === undefined ? {} : { first_seq: replay.firstSeq }),
    }),
  );
  for (const line of replay.lines) sink.write(line);
  for (const request of open) sink.write(viewer ? requestOpenLine(msg.sid, request.json) : `${request.json}\n`);
}

function deliver(state: GatewayState, sid: string, line: EventLine): void {
  const ids = state.attached.get(sid);
  if (ids === undefined) return;
  for (const id of ids) state.clients.get(id)?.write(line);
}
