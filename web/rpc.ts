// The page's connection to the daemon: the client protocol (PROTOCOL.md §2) over the edge's
// WebSocket (§5.2), authenticated by the login cookie. It comes back by itself when the
// connection drops, and says so, so that the page can resume from its last seq.

export interface EventMessage {
  type: string;
  session_id: string;
  payload: Record<string, unknown>;
  seq: number;
}

export interface ServerRequest {
  id: string;
  method: string;
  params: Record<string, unknown>;
}

export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

export interface RpcHandlers {
  event(event: EventMessage): void;
  request(request: ServerRequest): void;
  /** Connected (again): calls made now reach the daemon. */
  open(): void;
  closed(): void;
}

const CALL_TIMEOUT_MS = 60_000;
const RETRY_MIN_MS = 250;
const RETRY_MAX_MS = 4000;

export class PageRpc {
  private socket: WebSocket | null = null;
  private nextId = 0;
  private retryMs = RETRY_MIN_MS;
  private readonly pending = new Map<number, { resolve(value: unknown): void; reject(err: Error): void; timer: number }>();

  constructor(private readonly handlers: RpcHandlers) {
    this.connect();
  }

  get connected(): boolean {
    return this.socket?.readyState === WebSocket.OPEN;
  }

  call<T>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    const socket = this.socket;
    if (socket === null || socket.readyState !== WebSocket.OPEN) return Promise.reject(new Error('not connected to turnhost'));
    const id = ++this.nextId;
    return new Promise<T>((resolve, reject) => {
      const timer = window.setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${method}: no answer`));
      }, CALL_TIMEOUT_MS);
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject, timer });
      socket.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    });
  }

  /** The answer to a server request (a clarify or an approval question). */
  answer(id: string, result: unknown): void {
    this.socket?.send(JSON.stringify({ jsonrpc: '2.0', id, result }));
  }

  private connect(): void {
    const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/v1/rpc`;
    const socket = new WebSocket(url);
    this.socket = socket;
    socket.onopen = () => {
      this.retryMs = RETRY_MIN_MS;
      this.handlers.open();
    };
    socket.onmessage = (message) => this.receive(String(message.data));
    socket.onclose = () => {
      for (const [id, call] of this.pending) {
        window.clearTimeout(call.timer);
        call.reject(new Error('the connection to turnhost dropped'));
        this.pending.delete(id);
      }
      this.handlers.closed();
      window.setTimeout(() => this.connect(), this.retryMs);
      this.retryMs = Math.min(RETRY_MAX_MS, this.retryMs * 2);
    };
  }

  private receive(text: string): void {
    let message: Record<string, unknown>;
    try {
      message = JSON.parse(text) as Record<string, unknown>;
    } catch {
      return;
    }
    if (message['method'] === 'event') {
      this.handlers.event(message['params'] as EventMessage);
      return;
    }
    if (typeof message['method'] === 'string' && typeof message['id'] === 'string') {
      this.handlers.request(message as unknown as ServerRequest);
      return;
    }
    const call = typeof message['id'] === 'number' ? this.pending.get(message['id']) : undefined;
    if (call === undefined) return;
    this.pending.delete(message['id'] as number);
    window.clearTimeout(call.timer);
    const error = message['error'] as { code?: number; message?: string } | undefined;
    if (error) call.reject(new RpcError(Number(error.code), String(error.message)));
    else call.resolve(message['result']);
  }
}
