// A real `turnhost daemon` for integration tests, and clients of its socket.
import { expect } from 'chai';
import { join } from 'node:path';
import { RpcClient, type EventParams, type ServerRequest } from '../../client/rpc-connection.js';
import { RpcError } from '../../protocol/client-rpc.js';
import { Harness, HostProcess } from './processes.js';
import { Waiters } from './waiters.js';

export interface Daemon {
  home: string;
  process: HostProcess;
  socket: string;
}

/**
 * Starts `turnhost daemon --home HOME …` in the foreground and waits until it listens (its socket,
 * and its edge with --listen) and its host is ready: the host starts while the daemon opens its
 * doors, and either may come first.
 */
export async function startDaemon(h: Harness, args: readonly string[] = [], env: NodeJS.ProcessEnv = {}, home = h.tempDir()): Promise<Daemon> {
  const process = new HostProcess(h.spawnCli(['daemon', '--home', home, ...args], { TURNHOST_LOG_LEVEL: 'info', ...env }));
  await process.logged(/"msg":"daemon listening"/, 15_000);
  await process.logged(/"msg":"host ready"/, 15_000);
  return { home, process, socket: join(home, 'turnhost.sock') };
}

/** A daemon with its edge on a free loopback port, `token` its token: the daemon and the edge's URL. */
export async function startEdgeDaemon(h: Harness, token: string, args: readonly string[] = []): Promise<{ daemon: Daemon; url: string }> {
  const daemon = await startDaemon(h, ['--listen', '127.0.0.1:0', ...args], { TURNHOST_TOKEN: token });
  const socket = await TestClient.connect(daemon);
  const url = (await socket.call<{ http: { url: string } }>('host.status')).http.url;
  socket.close();
  return { daemon, url };
}

export interface HostStatus {
  host: { pid: number | null; state: string; restarts: number; last_error: string | null };
}

export async function hostPid(client: TestClient): Promise<number> {
  return (await client.call<HostStatus>('host.status')).host.pid!;
}

/** Resolves once the daemon has logged "host ready" `times` times in all (the first start counts). */
export async function hostReady(daemon: Daemon, times: number): Promise<void> {
  await daemon.process.logged(new RegExp(`(?:"msg":"host ready"[^]*){${times}}`), 15_000);
}

/** A socket client that keeps every event and server request it receives. */
export class TestClient {
  readonly events: EventParams[] = [];
  readonly requests: ServerRequest[] = [];
  private readonly waiters = new Waiters<void>();

  private constructor(readonly rpc: RpcClient) {
    rpc.onEvent = (e) => {
      this.events.push(e);
      this.check();
    };
    rpc.onServerRequest = (r) => {
      this.requests.push(r);
      this.check();
    };
  }

  static async connect(daemon: Pick<Daemon, 'socket'>): Promise<TestClient> {
    return new TestClient(await RpcClient.connect(daemon.socket));
  }

  call<T = Record<string, unknown>>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    return this.rpc.call<T>(method, params, 30_000);
  }

  /** Resolves once the condition holds on what this client has received. */
  async until(match: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
    if (match()) return;
    await this.waiters.wait(match, timeoutMs, () => `no ${what} within ${timeoutMs} ms; events: ${this.events.map((e) => e.type).join(', ')}`);
  }

  event(type: string, sid?: string): EventParams | undefined {
    return this.events.find((e) => e.type === type && (sid === undefined || e.session_id === sid));
  }

  async nextEvent(type: string, sid: string, where: (e: EventParams) => boolean = () => true): Promise<EventParams> {
    await this.until(() => this.events.some((e) => e.type === type && e.session_id === sid && where(e)), `${type} for ${sid}`);
    return this.events.find((e) => e.type === type && e.session_id === sid && where(e))!;
  }

  reply(sid: string): string {
    return this.events
      .filter((e) => e.session_id === sid && e.type === 'message.complete')
      .map((e) => String(e.payload['text']))
      .join('|');
  }

  close(): void {
    this.rpc.close();
  }

  private check(): void {
    this.waiters.offer(undefined, 'all');
  }
}

/** A message of `session.history`, as the branch and life tests read it. */
export interface HistoryMessage {
  seq: number;
  role: string;
  content: string;
  turn_id: string | null;
  superseded?: boolean;
  superseded_by?: string | null;
}

/** Submits a prompt and resolves with its turn's id once that turn has ended (turn.end). */
export async function endedTurn(client: TestClient, sid: string, text: string): Promise<string> {
  const { turn_id } = await client.call<{ turn_id: string }>('prompt.submit', { session_id: sid, text });
  await client.nextEvent('turn.end', sid, (e) => e.payload['turn_id'] === turn_id);
  return turn_id;
}

export async function historyOf(client: TestClient, sid: string, all = false): Promise<HistoryMessage[]> {
  return (await client.call<{ messages: HistoryMessage[] }>('session.history', { session_id: sid, all })).messages;
}

/** The error code a call was refused with; 0 when it was answered. */
export async function rpcCode(call: Promise<unknown>): Promise<number> {
  try {
    await call;
  } catch (err) {
    return (err as { code: number }).code;
  }
  return 0;
}

/** The error a call was answered with; fails the test when it succeeded or failed otherwise. */
export async function rpcError(promise: Promise<unknown>): Promise<RpcError> {
  const outcome = await promise.then(
    () => new Error('expected an error'),
    (e: unknown) => e,
  );
  expect(outcome).to.be.instanceOf(RpcError);
  return outcome as RpcError;
}
