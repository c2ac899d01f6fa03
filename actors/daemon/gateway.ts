// The gateway actor: the client connections, which clients are attached to which session, and
// the session's open server requests as the clients saw them. Every message and event of a
// session goes to all of its attached clients, in the order the host wrote them.
import type { Logger } from 'pino';
import { spawnActor, tell, type Ref, type SystemRef } from '../runtime.js';
import type { ClientSink, GatewayMsg } from './supervisor-messages.js';

interface OpenRequest {
  sid: string;
  json: string;
}

interface GatewayState {
  clients: Map<number, ClientSink>;
  attached: Map<string, Set<number>>;
  requests: Map<string, OpenRequest>;
}

export function spawnGateway(system: SystemRef, log: Logger): Ref<GatewayMsg> {
  return spawnActor<GatewayState, GatewayMsg>(system, 'gateway', (state, msg) => handle(state, msg), {
    log: log.child({ actor: 'gateway' }),
    init: () => ({ clients: new Map(), attached: new Map(), requests: new Map() }),
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
      return state;
    case 'attach': {
      const ids = state.attached.get(msg.sid) ?? new Set<number>();
      ids.add(msg.clientId);
      state.attached.set(msg.sid, ids);
      return state;
    }
    case 'session-message':
      if (msg.request) state.requests.set(msg.request.id, { sid: msg.sid, json: msg.json });
      if (msg.cancelled) state.requests.delete(msg.cancelled);
      deliver(state, msg.sid, `${msg.json}\n`);
      return state;
    case 'event':
      deliver(state, msg.sid, `${JSON.stringify({ jsonrpc: '2.0', method: 'event', params: { type: msg.type, session_id: msg.sid, payload: msg.payload } })}\n`);
      return state;
    case 'turn-ended':
      // A server request lives within its turn: none is open once the turn has ended.
      for (const [id, request] of state.requests) if (request.sid === msg.sid) state.requests.delete(id);
      return state;
    case 'request-closed':
      state.requests.delete(msg.requestId);
      return state;
    case 'request-session':
      tell(msg.replyTo, state.requests.get(msg.requestId)?.sid ?? null);
      return state;
    case 'open-requests': {
      const open: unknown[] = [];
      for (const request of state.requests.values()) if (request.sid === msg.sid) open.push(JSON.parse(request.json));
      tell(msg.replyTo, open);
      return state;
    }
    case 'batch':
      for (const message of msg.messages) handle(state, message);
      return state;
    case 'host-ready':
      for (const recovered of msg.recovered) {
        const text = `session recovered after ${recovered.reason === 'crash' ? 'a host crash' : 'a shutdown that outlasted its turn'}`;
        deliver(state, recovered.sid, `${JSON.stringify({ jsonrpc: '2.0', method: 'event', params: { type: 'status.update', session_id: recovered.sid, payload: { kind: 'recovered', text, reason: recovered.reason } } })}\n`);
      }
      return state;
  }
}

function deliver(state: GatewayState, sid: string, line: string): void {
  const ids = state.attached.get(sid);
  if (ids === undefined) return;
  for (const id of ids) state.clients.get(id)?.write(line);
}
