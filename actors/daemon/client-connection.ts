// One client actor per connection, on turnhost.sock or a WebSocket of the HTTP edge: reads
// JSON-RPC messages, runs each request without holding up the next (a slow control must not delay
// an interrupt), and writes every answer as one message. A client that stops reading is cut off before its buffer grows unbounded
// (client-output.ts, unread-bound.ts).
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { ErrorCodes, errorLine, parseClientMessage, resultLine, RpcError } from '../../protocol/client-rpc.js';
import { LineReader, MAX_FRAME_BYTES } from '../../protocol/line-reader.js';
import { isRecord } from '../../protocol/fields.js';
import { validUserName } from '../../persistence/people.js';
import { authorize, invokeMethod } from './client-methods.js';
import { answerServerRequest } from './methods/answers.js';
import { ANSWERED_ELSEWHERE } from './methods/method-table.js';
import { clientContext, type ClientContext, type SharedContext } from './client-context.js';
import { spawnActor, stopActor, tell, type AnyRef } from '../runtime.js';
import type { ClientMsg, ClientSink } from './supervisor-messages.js';
import { ClientOutput } from './client-output.js';
import type { Overrun, UnreadLimits } from './unread-bound.js';
import { FORWARDED, PeerLinks } from './peer-links.js';


let lastClientId = 0;

/** Every client of the gateway has its own id, whatever door it came by (a socket, a WebSocket, an event stream). */
export function nextClientId(): number {
  return ++lastClientId;
}

/** The lines a client is sent (JSON-RPC messages, each ending in a newline), bounded by what it leaves unread. */
export interface ClientLines {
  write(line: string | Buffer): void;
  /** Writes what is held, then ends the connection. */
  end(): void;
  /** Ends the connection now, whatever is still held (a stopping daemon's last resort). */
  destroy(): void;
}

export interface TransportHandlers {
  /** The JSON-RPC messages of one read, in order, as text. */
  messages(texts: string[]): void;
  /** A message over the 8 MiB bound came and was dropped. */
  oversized(): void;
  closed(): void;
}

/** A door clients come in by: a line on the unix socket, or a WebSocket frame, is one message. */
export interface ClientTransport {
  readonly kind: 'unix' | 'websocket';
  readonly output: ClientLines;
  listen(handlers: TransportHandlers): void;
}

export type OnOverrun = (overrun: Overrun, unreadBytes: number) => void;
export type OpenTransport = (onOverrun: OnOverrun) => ClientTransport;

/** Who counts clients (the metrics): each one opened, closed, or cut off for not reading. */
export interface ClientWatcher {
  opened(kind: ClientTransport['kind']): void;
  closed(kind: ClientTransport['kind']): void;
  dropped(why: Overrun['why']): void;
}

export function unixTransport(socket: Socket, limits: UnreadLimits): OpenTransport {
  return (onOverrun) => ({
    kind: 'unix',
    output: new ClientOutput(socket, limits, onOverrun),
    listen(handlers) {
      // The lines of one read go to the client actor as one message: a message per line cost a
      // loop turn, a context and a promise each.
      let lines: string[] = [];
      const reader = new LineReader({ line: (text) => lines.push(text), oversized: handlers.oversized }, MAX_FRAME_BYTES);
      socket.on('data', (chunk: Buffer) => {
        reader.push(chunk);
        if (lines.length === 0) return;
        handlers.messages(lines);
        lines = [];
      });
      socket.on('error', () => socket.destroy());
      socket.on('close', handlers.closed);
    },
  });
}

/** Serves one connection; its output is returned so a stopping daemon can end it after its last lines. */
export function acceptClient(parent: AnyRef, open: OpenTransport, shared: SharedContext, log: Logger, watcher?: ClientWatcher): ClientLines {
  const id = nextClientId();
  const clientLog = log.child({ client: id });
  const transport = open((overrun, unreadBytes) => {
    watcher?.dropped(overrun.why);
    clientLog.warn({ unreadBytes, maxUnreadBytes: overrun.maxUnreadBytes }, `client ${overrun.why}: disconnecting it`);
  });
  const sink: ClientSink = { id, write: (line) => transport.output.write(line) };
  const ctx = clientContext(shared, id);
  const followHere = (sid: string): void => {
    if (ctx.identity.admin) tell(ctx.gateway, { kind: 'attach', sid, clientId: id });
    else void ctx.access.mayAnswer(ctx.identity, sid).then((answers) => tell(ctx.gateway, { kind: 'attach', sid, clientId: id, viewer: !answers }), () => {});
    shared.cluster?.follow(sid);
  };
  const peers = shared.cluster === null ? null : new PeerLinks(shared.cluster, sink.write, followHere, clientLog, ctx.identity);
  const ref = spawnActor<null, ClientMsg>(
    parent,
    `client-${id}`,
    (state, msg, actor) => {
      if (msg.kind === 'closed') {
        peers?.close();
        tell(ctx.gateway, { kind: 'client-closed', clientId: id });
        stopActor(actor.self);
        return state;
      }
      for (const text of msg.texts) onLine(text, sink, ctx, peers, clientLog);
      return state;
    },
    { log: clientLog, init: () => null },
  );
  tell(ctx.gateway, { kind: 'client-open', sink });
  watcher?.opened(transport.kind);
  transport.listen({
    messages: (texts) => tell(ref, { kind: 'lines', texts }),
    oversized: () => sink.write(errorLine(null, new RpcError(ErrorCodes.invalidRequest, 'message too large (over 8 MiB)'))),
    closed: () => {
      watcher?.closed(transport.kind);
      tell(ref, { kind: 'closed' });
    },
  });
  return transport.output;
}

/** `peers`: as a node of several, where the methods on sessions other nodes own are sent on. */
function onLine(text: string, sink: ClientSink, ctx: ClientContext, peers: PeerLinks | null, log: Logger): void {
  const message = parseClientMessage(text);
  switch (message.kind) {
    case 'invalid':
      sink.write(errorLine(message.id, message.error));
      return;
    case 'notification':
      return;
    case 'response':
      if (peers?.response(message.id, text)) return;
      if (typeof message.id === 'string') {
        const requestId = message.id;
        allowed(ctx, 'request.answer', { request_id: requestId })
          .then(() => answerServerRequest(ctx, requestId, message))
          .catch((err: unknown) => log.warn({ err }, 'could not relay a client answer'));
      }
      return;
    case 'request': {
      const caller = vouchedFor(ctx, message.vouched);
      const here = () => invokeMethod(message.method, message.params, caller, message.id);
      // Checked here, then again by the owner node it may be sent on to, as the person vouched for.
      const run = () => (peers === null ? here() : peers.request(message, text, here));
      (caller.identity.admin ? run() : authorize(message.method, message.params, caller).then(run)).then(
        (result) => {
          if (result !== ANSWERED_ELSEWHERE && result !== FORWARDED) sink.write(resultLine(message.id, result));
        },
        (err: unknown) => sink.write(errorLine(message.id, asRpcError(err, log))),
      );
      return;
    }
  }
}

/**
 * On another node's link, a request may say whose it is (peer-links.ts vouches with the link,
 * which proved the cluster secret): the method runs as that person, under the same rules. Anyone
 * else's `vouched` is ignored.
 */
function vouchedFor(connection: ClientContext, vouched: unknown): ClientContext {
  if (connection.peer !== true || !isRecord(vouched) || typeof vouched['user'] !== 'string' || !validUserName(vouched['user'])) return connection;
  return { ...connection, identity: { user: vouched['user'], admin: vouched['admin'] === true, via: 'token' } };
}

function allowed(ctx: ClientContext, method: string, params: Record<string, unknown>): Promise<void> {
  return ctx.identity.admin ? Promise.resolve() : authorize(method, params, ctx);
}

/** Any throw that is not already a wire error is a 5000 with its message. */
function asRpcError(err: unknown, log: Logger): RpcError {
  if (err instanceof RpcError) return err;
  log.error({ err }, 'client method failed');
  return new RpcError(ErrorCodes.internal, (err as Error).message ?? String(err));
}
