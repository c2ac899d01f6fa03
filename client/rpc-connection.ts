// A JSON-RPC connection to the daemon, over its unix socket or the HTTP edge's WebSocket: calls
// with ids, events and server requests as callbacks. The client library (turnhost-client.ts) and the CLI build on it.
import { connect, type Socket } from 'node:net';
import type { WebSocket } from 'ws';
import { RpcError } from '../protocol/client-rpc.js';
import { isRecord } from '../protocol/fields.js';
import { LineReader } from '../protocol/line-reader.js';

export interface ServerRequest {
  id: string;
  method: string;
  params: Record<string, unknown>;
}

export interface EventParams {
  type: string;
  session_id: string;
  payload: Record<string, unknown>;
  /** Per session, increasing by one with each event (PROTOCOL.md §2). */
  seq: number;
}

const DEFAULT_CALL_TIMEOUT_MS = 60_000;

/** One JSON-RPC message at a time, both ways: a line on the unix socket, a frame on a WebSocket. */
export interface RpcChannel {
  send(text: string): void;
  close(): void;
  readonly isClosed: boolean;
}

export interface ChannelHandlers {
  message(text: string): void;
  closed(): void;
}

export class RpcClient {
  private nextId = 0;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>();
  onEvent: (event: EventParams) => void = () => {};
  onServerRequest: (request: ServerRequest) => void = () => {};
  readonly closed: Promise<void>;
  private readonly channel: RpcChannel;

  private constructor(open: (handlers: ChannelHandlers) => RpcChannel) {
    let closed: () => void = () => {};
    this.closed = new Promise((resolve) => (closed = resolve));
    this.channel = open({
      message: (text) => this.onLine(text),
      closed: () => {
        for (const [id, call] of this.pending) {
          clearTimeout(call.timer);
          call.reject(new Error('the daemon closed the connection'));
          this.pending.delete(id);
        }
        closed();
      },
    });
  }

  get isClosed(): boolean {
    return this.channel.isClosed;
  }

  /** Rejects with the socket error (ENOENT, ECONNREFUSED: no daemon). */
  static connect(path: string, timeoutMs = 2000): Promise<RpcClient> {
    return new Promise((resolve, reject) => {
      const socket = connect(path);
      const timer = setTimeout(() => {
        socket.destroy();
        reject(Object.assign(new Error('connection timed out'), { code: 'ETIMEDOUT' }));
      }, timeoutMs);
      socket.once('connect', () => {
        clearTimeout(timer);
        resolve(new RpcClient((handlers) => socketChannel(socket, handlers)));
      });
      socket.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
    });
  }

  /**
   * Over the HTTP edge's WebSocket (PROTOCOL.md §5.2), the token in the Authorization header. `ws`
   * (and Node's http, https and tls under it) is loaded only here: a command on the unix socket
   * starts 60 ms sooner without it.
   */
  static async connectUrl(url: string, token: string, timeoutMs = 5000): Promise<RpcClient> {
    const { WebSocket } = await import('ws');
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(new URL('/v1/rpc', url).href.replace(/^http/, 'ws'), { headers: { authorization: `Bearer ${token}` }, handshakeTimeout: timeoutMs });
      ws.once('open', () => resolve(new RpcClient((handlers) => websocketChannel(ws, handlers))));
      ws.once('unexpected-response', (_req, res) => {
        ws.terminate();
        reject(Object.assign(new Error(`the edge answered ${res.statusCode}`), { code: res.statusCode === 401 ? 'EAUTH' : 'EHTTP' }));
      });
      ws.once('error', (err) => reject(err));
    });
  }

  call<T>(method: string, params: Record<string, unknown> = {}, timeoutMs = DEFAULT_CALL_TIMEOUT_MS): Promise<T> {
    // A call after the close would wait out its whole bound: the close already failed the pending ones.
    if (this.channel.isClosed) return Promise.reject(new Error('the daemon closed the connection'));
    const id = ++this.nextId;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${method}: no answer within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject, timer });
      this.channel.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    });
  }

  respond(id: string, answer: { result: unknown } | { error: { code: number; message: string } }): void {
    this.channel.send(JSON.stringify({ jsonrpc: '2.0', id, ...answer }));
  }

  close(): void {
    this.channel.close();
  }

  private onLine(text: string): void {
    let message: Record<string, unknown>;
    try {
      const value: unknown = JSON.parse(text);
      if (!isRecord(value)) return;
      message = value;
    } catch {
      return;
    }
    if (message['method'] === 'event') {
      this.onEvent(message['params'] as EventParams);
      return;
    }
    if (typeof message['method'] === 'string' && typeof message['id'] === 'string') {
      this.onServerRequest(message as unknown as ServerRequest);
      return;
    }
    const call = typeof message['id'] === 'number' ? this.pending.get(message['id']) : undefined;
    if (call === undefined) return;
    this.pending.delete(message['id'] as number);
    clearTimeout(call.timer);
    const error = message['error'];
    if (isRecord(error)) call.reject(new RpcError(Number(error['code']), String(error['message']), error['data']));
    else call.resolve(message['result']);
  }
}

function socketChannel(socket: Socket, handlers: ChannelHandlers): RpcChannel {
  const reader = new LineReader({ line: handlers.message, oversized: () => {} });
  socket.on('data', (chunk: Buffer) => reader.push(chunk));
  socket.once('close', handlers.closed);
  socket.on('error', () => {});
  return {
    send: (text) => socket.write(`${text}\n`),
    close: () => socket.end(),
    get isClosed() {
      return socket.destroyed;
    },
  };
}

function websocketChannel(ws: WebSocket, handlers: ChannelHandlers): RpcChannel {
  ws.on('message', (data) => handlers.message(data.toString()));
  ws.once('close', handlers.closed);
  ws.on('error', () => {});
  return {
    send: (text) => ws.send(text),
    close: () => ws.close(),
    get isClosed() {
      return ws.readyState === ws.CLOSED || ws.readyState === ws.CLOSING;
    },
  };
}
