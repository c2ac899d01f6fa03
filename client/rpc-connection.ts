// A JSON-RPC connection to the daemon's socket: calls with ids, events and server requests as
// callbacks. The client library (turnhost-client.ts) and the CLI build on it.
import { connect, type Socket } from 'node:net';
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

export class RpcClient {
  private nextId = 0;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>();
  onEvent: (event: EventParams) => void = () => {};
  onServerRequest: (request: ServerRequest) => void = () => {};
  readonly closed: Promise<void>;

  private constructor(private readonly socket: Socket) {
    const reader = new LineReader({ line: (text) => this.onLine(text), oversized: () => {} });
    socket.on('data', (chunk: Buffer) => reader.push(chunk));
    this.closed = new Promise((resolve) =>
      socket.once('close', () => {
        for (const [id, call] of this.pending) {
          clearTimeout(call.timer);
          call.reject(new Error('the daemon closed the connection'));
          this.pending.delete(id);
        }
        resolve();
      }),
    );
    socket.on('error', () => {});
  }

  get isClosed(): boolean {
    return this.socket.destroyed;
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
        resolve(new RpcClient(socket));
      });
      socket.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
    });
  }

  call<T>(method: string, params: Record<string, unknown> = {}, timeoutMs = DEFAULT_CALL_TIMEOUT_MS): Promise<T> {
    const id = ++this.nextId;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${method}: no answer within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject, timer });
      this.socket.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    });
  }

  respond(id: string, answer: { result: unknown } | { error: { code: number; message: string } }): void {
    this.socket.write(`${JSON.stringify({ jsonrpc: '2.0', id, ...answer })}\n`);
  }

  close(): void {
    this.socket.end();
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
