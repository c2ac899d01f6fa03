// The daemon's benchmarks' client: JSON-RPC on the daemon's socket or the edge's WebSocket,
// looking only at replies and turn ends, so that the client costs as little as it can.
import { connect } from 'node:net';
import { WebSocket } from 'ws';
import { LineReader } from '../protocol/line-reader.js';
import { sleep, type TurnTarget } from './driver.js';

const RESTART_POLL_MS = 5;
const TURN_END = '"type":"turn.end"';
const TURN_ERROR = '"type":"turn.error"';

/** A JSON-RPC client of the daemon (its socket, or the edge's WebSocket) that only looks at replies and turn.end events. */
export class RpcDriver implements TurnTarget {
  private nextId = 0;
  private readonly replies = new Map<number, (line: string) => void>();
  private endListener: (sid: string) => void = () => {};
  private onError: (sid: string) => void = () => {};

  private constructor(
    private readonly send: (text: string) => void,
    private readonly end: () => void,
    listen: (line: (text: string) => void) => void,
  ) {
    listen((line) => {
      const ended = line.includes(TURN_END);
      if (ended || line.includes(TURN_ERROR)) {
        const at = line.indexOf('"session_id":"') + 14;
        const sid = line.slice(at, line.indexOf('"', at));
        if (ended) this.endListener(sid);
        else this.onError(sid);
        return;
      }
      const id = /^\{"jsonrpc":"2\.0","id":(\d+)/.exec(line);
      if (id) {
        const reply = this.replies.get(Number(id[1]));
        this.replies.delete(Number(id[1]));
        reply?.(line);
      }
    });
  }

  static open(path: string): Promise<RpcDriver> {
    return new Promise((resolve, reject) => {
      const socket = connect(path);
      socket.once('connect', () =>
        resolve(
          new RpcDriver(
            (text) => socket.write(`${text}\n`),
            () => socket.end(),
            (line) => {
              const reader = new LineReader({ line, oversized: () => {} });
              socket.on('data', (chunk: Buffer) => reader.push(chunk));
            },
          ),
        ),
      );
      socket.once('error', reject);
    });
  }

  static openWebSocket(url: string, token: string): Promise<RpcDriver> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/v1/rpc`, { headers: { authorization: `Bearer ${token}` } });
      ws.once('open', () =>
        resolve(
          new RpcDriver(
            (text) => ws.send(text),
            () => ws.close(),
            (line) => ws.on('message', (data) => line(data.toString())),
          ),
        ),
      );
      ws.once('error', reject);
    });
  }

  call(method: string, params: object): Promise<string> {
    const id = ++this.nextId;
    return new Promise((resolve) => {
      this.replies.set(id, resolve);
      this.send(`{"jsonrpc":"2.0","id":${id},"method":"${method}","params":${JSON.stringify(params)}}`);
    });
  }

  submit(sid: string): void {
    void this.call('prompt.submit', { session_id: sid, text: 'hello' });
  }

  onEnd(listener: (sid: string) => void): void {
    this.endListener = listener;
  }

  guarded<T>(promise: Promise<T>): Promise<T> {
    return promise;
  }

  async createSessions(sids: readonly string[]): Promise<void> {
    for (const sid of sids) await this.call('session.create', { session_id: sid });
  }

  async hostPid(): Promise<number> {
    const status = JSON.parse(await this.call('host.status', {})) as { result: { host: { pid: number } } };
    return status.result.host.pid;
  }

  /**
   * kill -9 of the host, then turns until one succeeds: the time a crash costs a client. A turn
   * accepted before the supervisor saw the crash ends in turn.error (crash), and is tried again.
   */
  async restartMs(): Promise<number> {
    const hostPid = await this.hostPid();
    const sid = 'after-crash';
    await this.call('session.create', { session_id: sid });
    const killedAt = performance.now();
    process.kill(hostPid, 'SIGKILL');
    for (;;) {
      const outcome = new Promise<boolean>((resolve) => {
        this.endListener = (s) => s === sid && resolve(true);
        this.onError = (s) => s === sid && resolve(false);
      });
      const reply = await this.call('prompt.submit', { session_id: sid, text: 'are you back?' });
      if (reply.includes('"result"') && (await outcome)) return performance.now() - killedAt;
      await sleep(RESTART_POLL_MS);
    }
  }

  close(): void {
    this.end();
  }
}

