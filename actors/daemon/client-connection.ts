// One client actor per connection on turnhost.sock: reads JSON-RPC lines, runs each request
// without holding up the next (a slow control must not delay an interrupt), and writes every
// answer as one line. A client that stops reading is cut off before its buffer grows unbounded
// (client-output.ts, unread-bound.ts).
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { ErrorCodes, errorLine, parseClientMessage, resultLine, RpcError } from '../../protocol/client-rpc.js';
import { LineReader, MAX_FRAME_BYTES } from '../../protocol/line-reader.js';
import { ANSWERED_ELSEWHERE, answerServerRequest, callMethod, type ClientContext } from './client-methods.js';
import { spawnActor, stopActor, tell, type AnyRef } from '../runtime.js';
import type { ClientMsg, ClientSink } from './supervisor-messages.js';
import { ClientOutput } from './client-output.js';
import type { UnreadLimits } from './unread-bound.js';


let lastClientId = 0;

export type ConnectionContext = Omit<ClientContext, 'clientId' | 'cwds'>;

/** Serves one connection; its output is returned so a stopping daemon can end it after its last lines. */
export function acceptClient(parent: AnyRef, socket: Socket, shared: ConnectionContext, limits: UnreadLimits, log: Logger): ClientOutput {
  const id = ++lastClientId;
  const clientLog = log.child({ client: id });
  const output = new ClientOutput(socket, limits, (overrun, unreadBytes) =>
    clientLog.warn({ unreadBytes, maxUnreadBytes: overrun.maxUnreadBytes }, `client ${overrun.why}: disconnecting it`),
  );
  const sink: ClientSink = { id, write: (line) => output.write(line) };
  const ctx: ClientContext = { ...shared, clientId: id, cwds: new Map() };
  const ref = spawnActor<null, ClientMsg>(
    parent,
    `client-${id}`,
    (state, msg, actor) => {
      if (msg.kind === 'closed') {
        tell(ctx.gateway, { kind: 'client-closed', clientId: id });
        stopActor(actor.self);
        return state;
      }
      onLine(msg.text, sink, ctx, clientLog);
      return state;
    },
    { log: clientLog, init: () => null },
  );
  tell(ctx.gateway, { kind: 'client-open', sink });
  const reader = new LineReader({
    line: (text) => tell(ref, { kind: 'line', text }),
    oversized: () => sink.write(errorLine(null, new RpcError(ErrorCodes.invalidRequest, 'message too large (over 8 MiB)'))),
  }, MAX_FRAME_BYTES);
  socket.on('data', (chunk: Buffer) => reader.push(chunk));
  socket.on('error', () => socket.destroy());
  socket.on('close', () => tell(ref, { kind: 'closed' }));
  return output;
}

function onLine(text: string, sink: ClientSink, ctx: ClientContext, log: Logger): void {
  const message = parseClientMessage(text);
  switch (message.kind) {
    case 'invalid':
      sink.write(errorLine(message.id, message.error));
      return;
    case 'notification':
      return;
    case 'response':
      if (typeof message.id === 'string') {
        answerServerRequest(ctx, message.id, message).catch((err: unknown) => log.warn({ err }, 'could not relay a client answer'));
      }
      return;
    case 'request':
      callMethod(message.method, message.params, ctx, message.id).then(
        (result) => {
          if (result !== ANSWERED_ELSEWHERE) sink.write(resultLine(message.id, result));
        },
        (err: unknown) => sink.write(errorLine(message.id, asRpcError(err, log))),
      );
      return;
  }
}

/** Any throw that is not already a wire error is a 5000 with its message. */
function asRpcError(err: unknown, log: Logger): RpcError {
  if (err instanceof RpcError) return err;
  log.error({ err }, 'client method failed');
  return new RpcError(ErrorCodes.internal, (err as Error).message ?? String(err));
}
