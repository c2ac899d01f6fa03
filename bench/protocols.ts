// `npm run bench -- protocols`: a turn through AG-UI (POST /v1/ag-ui, read to RUN_FINISHED), through
// ACP (`turnhost acp`, session/prompt to its answer), over REST (POST …/prompts, its end read from
// the session's event stream) and over A2A (a blocking SendMessage; SendStreamingMessage read to its
// end) beside the same turn over the unix socket, on one daemon per round, the doors measured in
// turn (the order rotates between rounds): one session's p50 and p99, and turns/s at 64 sessions.
// REST is the floor of A2A (PROTOCOL.md §7.3: within 1 ms at p50; streams within 10% in turns/s).
// The bench's clients read only for the end of a turn, so that they are not what is measured.
import { spawn, type ChildProcess } from 'node:child_process';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { readToken } from '../edge/http-token.js';
import { LineReader } from '../protocol/line-reader.js';
import { CLI, median, printTable, range, round, ROUNDS, withTempDir, writeResult } from './common.js';
import { startDaemon, stopDaemon } from './daemon.js';
import { backToBack, CallbackTarget, closedLoop, PATH_PLAN, sessionIds, type TurnTarget } from './driver.js';
import { RpcDriver } from './rpc-driver.js';

const { sessions: SESSIONS, warmupMs: WARMUP_MS, measureMs: MEASURE_MS } = PATH_PLAN;
const LATENCY_WARMUP = 100;
const LATENCY_TURNS = 1000;

type Door = 'socket' | 'ag-ui' | 'acp' | 'rest' | 'a2a' | 'a2a-stream';
const DOORS: readonly Door[] = ['socket', 'ag-ui', 'acp', 'rest', 'a2a', 'a2a-stream'];
const DOOR_NAMES: Record<Door, string> = {
  socket: 'unix socket (JSON-RPC)',
  'ag-ui': 'AG-UI (POST /v1/ag-ui, SSE)',
  acp: 'ACP (turnhost acp, stdio)',
  rest: 'REST (POST …/prompts, the end on …/events)',
  a2a: 'A2A SendMessage (blocking)',
  'a2a-stream': 'A2A SendStreamingMessage (SSE)',
};

interface DoorRun {
  p50Ms: number;
  p99Ms: number;
  turnsPerSec?: number;
}

/** AG-UI runs, one POST per turn on kept-alive connections, each read only to its RUN_FINISHED. */
class AgUiDriver extends CallbackTarget {
  private readonly agent = new Agent({ keepAlive: true, maxSockets: Infinity });
  private runs = 0;

  constructor(
    private readonly url: string,
    private readonly token: string,
  ) {
    super();
  }

  submit(sid: string): void {
    const body = JSON.stringify({ threadId: sid, runId: `run-${++this.runs}`, messages: [{ id: `m-${this.runs}`, role: 'user', content: 'hello' }], tools: [], context: [], state: {} });
    const req = request(`${this.url}/v1/ag-ui`, { method: 'POST', agent: this.agent, headers: { authorization: `Bearer ${this.token}`, 'content-type': 'application/json', accept: 'text/event-stream' } }, (res) => {
      let tail = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        const text = tail + chunk;
        tail = chunk.slice(-24);
        if (text.includes('"RUN_ERROR"')) this.failure = new Error(`an AG-UI run failed: ${text}`);
      });
      res.once('end', () => this.endListener(sid));
    });
    req.on('error', (err) => (this.failure = err));
    req.end(body);
  }

  close(): void {
    this.agent.destroy();
  }
}

/** Sessions made over REST, as a client of the edge makes them: A2A's contexts are these. */
async function restSessions(url: string, token: string, sids: readonly string[]): Promise<void> {
  for (const sid of sids) {
    const made = await fetch(`${url}/v1/sessions`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ session_id: sid }) });
    if (made.status !== 201) throw new Error(`POST /v1/sessions answered ${made.status}: ${await made.text()}`);
  }
}

/** REST: a prompt POSTed, its end read from the session's event stream, opened once per session. */
class RestDriver extends CallbackTarget {
  private readonly agent = new Agent({ keepAlive: true, maxSockets: Infinity });
  private readonly streams: ReturnType<typeof request>[] = [];

  private constructor(
    private readonly url: string,
    private readonly token: string,
  ) {
    super();
  }

  static async open(url: string, token: string, sids: readonly string[]): Promise<RestDriver> {
    await restSessions(url, token, sids);
    const driver = new RestDriver(url, token);
    await Promise.all(sids.map((sid) => driver.follow(sid)));
    return driver;
  }

  submit(sid: string): void {
    const req = request(`${this.url}/v1/sessions/${sid}/prompts`, { method: 'POST', agent: this.agent, headers: { authorization: `Bearer ${this.token}`, 'content-type': 'application/json' } }, (res) => {
      if (res.statusCode !== 202) this.failure = new Error(`a prompt answered ${res.statusCode}`);
      res.resume();
    });
    req.on('error', (err) => (this.failure = err));
    req.end('{"text":"hello"}');
  }

  close(): void {
    for (const stream of this.streams) stream.destroy();
    this.agent.destroy();
  }

  /** Resolves once the session's stream is open (its `ready`); each `turn.end` on it ends a turn. */
  private follow(sid: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const stream = request(`${this.url}/v1/sessions/${sid}/events`, { headers: { authorization: `Bearer ${this.token}`, accept: 'text/event-stream' } }, (res) => {
        let tail = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          const text = tail + chunk;
          if (text.includes('event: ready')) resolve();
          const ends = text.split('event: turn.end\n').length - 1;
          tail = text.slice(-32);
          // A marker split across chunks is counted in the chunk that completes it, once: the tail keeps less than a marker.
          for (let i = 0; i < ends; i++) this.endListener(sid);
          tail = tail.slice(tail.lastIndexOf('\n') + 1);
        });
      });
      stream.on('error', reject);
      stream.end();
      this.streams.push(stream);
    });
  }
}

/** A2A over JSON-RPC 1.0: each turn a message of the session's context, blocking or streamed to its end. */
class A2aDriver extends CallbackTarget {
  private readonly agent = new Agent({ keepAlive: true, maxSockets: Infinity });
  private sent = 0;

  constructor(
    private readonly endpoint: string,
    private readonly token: string,
    private readonly streaming: boolean,
  ) {
    super();
  }

  submit(sid: string): void {
    const message = { messageId: `m-${++this.sent}`, contextId: sid, role: 'ROLE_USER', parts: [{ text: 'hello' }] };
    const body = JSON.stringify({ jsonrpc: '2.0', id: this.sent, method: this.streaming ? 'SendStreamingMessage' : 'SendMessage', params: { message } });
    const req = request(this.endpoint, { method: 'POST', agent: this.agent, headers: { authorization: `Bearer ${this.token}`, 'content-type': 'application/json', 'a2a-version': '1.0' } }, (res) => {
      let tail = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        const text = tail + chunk;
        tail = chunk.slice(-24);
        if (text.includes('"error"')) this.failure = new Error(`an A2A call failed: ${text.slice(0, 300)}`);
      });
      res.once('end', () => this.endListener(sid));
    });
    req.on('error', (err) => (this.failure = err));
    req.end(body);
  }

  close(): void {
    this.agent.destroy();
  }
}

/** `turnhost acp` as an editor drives it: newline-delimited JSON-RPC, one session/prompt per turn. */
class AcpDriver implements TurnTarget {
  private nextId = 0;
  private readonly replies = new Map<number, (line: string) => void>();
  private readonly sessions = new Map<string, string>();
  private endListener: (sid: string) => void = () => {};

  private constructor(private readonly child: ChildProcess) {
    const reader = new LineReader({
      line: (line) => {
        const id = /"id":(\d+)/.exec(line);
        if (id === null || line.includes('"method"')) return; // a notification, or a request of the agent's
        const reply = this.replies.get(Number(id[1]));
        this.replies.delete(Number(id[1]));
        reply?.(line);
      },
      oversized: () => {},
    });
    child.stdout!.on('data', (chunk: Buffer) => reader.push(chunk));
  }

  static async open(home: string): Promise<AcpDriver> {
    const driver = new AcpDriver(spawn(process.execPath, [CLI, 'acp', '--home', home], { stdio: ['pipe', 'pipe', 'inherit'] }));
    await driver.call('initialize', { protocolVersion: 1, clientCapabilities: {} });
    return driver;
  }

  async createSessions(names: readonly string[], cwd: string): Promise<void> {
    for (const name of names) {
      const answer = JSON.parse(await this.call('session/new', { cwd, mcpServers: [] })) as { result: { sessionId: string } };
      this.sessions.set(name, answer.result.sessionId);
    }
  }

  submit(sid: string): void {
    void this.call('session/prompt', { sessionId: this.sessions.get(sid), prompt: [{ type: 'text', text: 'hello' }] }).then(() => this.endListener(sid));
  }

  onEnd(listener: (sid: string) => void): void {
    this.endListener = listener;
  }

  guarded<T>(promise: Promise<T>): Promise<T> {
    return promise;
  }

  close(): Promise<void> {
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.stdin!.end();
    return exited;
  }

  private call(method: string, params: object): Promise<string> {
    const id = ++this.nextId;
    return new Promise((resolve) => {
      this.replies.set(id, resolve);
      this.child.stdin!.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    });
  }
}

async function measureDoor(door: Door, home: string, url: string): Promise<DoorRun> {
  switch (door) {
    case 'socket': {
      const driver = await RpcDriver.open(join(home, 'turnhost.sock'));
      const sids = sessionIds('sock', SESSIONS);
      await driver.createSessions([...sids, 'sock-lat']);
      const throughput = await closedLoop(driver, sids, WARMUP_MS, MEASURE_MS);
      const latency = await backToBack(driver, 'sock-lat', LATENCY_WARMUP, LATENCY_TURNS);
      driver.close();
      return { p50Ms: latency.p50Ms, p99Ms: latency.p99Ms, turnsPerSec: throughput.turnsPerSec };
    }
    case 'ag-ui': {
      const driver = new AgUiDriver(url, readToken(home));
      const throughput = await closedLoop(driver, sessionIds('agui', SESSIONS), WARMUP_MS, MEASURE_MS);
      const latency = await backToBack(driver, 'agui-lat', LATENCY_WARMUP, LATENCY_TURNS);
      driver.close();
      return { p50Ms: latency.p50Ms, p99Ms: latency.p99Ms, turnsPerSec: throughput.turnsPerSec };
    }
    case 'acp': {
      const driver = await AcpDriver.open(home);
      await driver.createSessions(['acp-lat'], home);
      const latency = await backToBack(driver, 'acp-lat', LATENCY_WARMUP, LATENCY_TURNS);
      await driver.close();
      return { p50Ms: latency.p50Ms, p99Ms: latency.p99Ms };
    }
    case 'rest': {
      const sids = sessionIds('rest', SESSIONS);
      const driver = await RestDriver.open(url, readToken(home), [...sids, 'rest-lat']);
      const throughput = await closedLoop(driver, sids, WARMUP_MS, MEASURE_MS);
      const latency = await backToBack(driver, 'rest-lat', LATENCY_WARMUP, LATENCY_TURNS);
      driver.close();
      return { p50Ms: latency.p50Ms, p99Ms: latency.p99Ms, turnsPerSec: throughput.turnsPerSec };
    }
    case 'a2a':
    case 'a2a-stream': {
      const token = readToken(home);
      const card = (await (await fetch(`${url}/.well-known/agent-card.json`)).json()) as { supportedInterfaces: { url: string }[] };
      const sids = sessionIds(door, SESSIONS);
      await restSessions(url, token, [...sids, `${door}-lat`]);
      const driver = new A2aDriver(card.supportedInterfaces[0]!.url, token, door === 'a2a-stream');
      const throughput = await closedLoop(driver, sids, WARMUP_MS, MEASURE_MS);
      const latency = await backToBack(driver, `${door}-lat`, LATENCY_WARMUP, LATENCY_TURNS);
      driver.close();
      return { p50Ms: latency.p50Ms, p99Ms: latency.p99Ms, turnsPerSec: throughput.turnsPerSec };
    }
  }
}

function measureRound(n: number): Promise<Record<Door, DoorRun>> {
  return withTempDir(async (home) => {
    const daemon = await startDaemon(home, ['--listen', '127.0.0.1:0']);
    const probe = await RpcDriver.open(join(home, 'turnhost.sock'));
    const url = (JSON.parse(await probe.call('host.status', {})) as { result: { http: { url: string } } }).result.http.url;
    probe.close();
    const runs: Partial<Record<Door, DoorRun>> = {};
    try {
      for (let i = 0; i < DOORS.length; i++) {
        const door = DOORS[(i + n) % DOORS.length]!;
        process.stdout.write(`round ${n + 1} of ${ROUNDS}: ${door}…\n`);
        runs[door] = await measureDoor(door, home, url);
      }
    } finally {
      await stopDaemon(daemon);
    }
    return runs as Record<Door, DoorRun>;
  });
}

export async function benchProtocols(): Promise<void> {
  const rounds: Record<Door, DoorRun>[] = [];
  for (let n = 0; n < ROUNDS; n++) rounds.push(await measureRound(n));
  const of = (door: Door, pick: (r: DoorRun) => number) => rounds.map((r) => pick(r[door]));
  const socketP50 = median(of('socket', (r) => r.p50Ms));
  printTable(
    `one session's turns back to back (${LATENCY_TURNS} turns, script agent; median of ${ROUNDS} rounds), and turns/s at ${SESSIONS} sessions`,
    ['door', 'p50 ms', 'p99 ms', 'p50 over the socket', `turns/s at ${SESSIONS}`, 'range'],
    DOORS.map((door) => {
      const p50 = median(of(door, (r) => r.p50Ms));
      const throughput = door === 'acp' ? null : of(door, (r) => r.turnsPerSec!);
      return [DOOR_NAMES[door], round(p50, 3), round(median(of(door, (r) => r.p99Ms)), 3), door === 'socket' ? '' : `+${round(p50 - socketP50, 3)}`, throughput ? round(median(throughput)) : '', throughput ? range(throughput) : ''];
    }),
  );
  // A2A against its floor, REST, in the same rounds (PROTOCOL.md §7.3).
  const restP50 = median(of('rest', (r) => r.p50Ms));
  const a2aP50 = median(of('a2a', (r) => r.p50Ms));
  const restRate = median(of('rest', (r) => r.turnsPerSec!));
  const streamRate = median(of('a2a-stream', (r) => r.turnsPerSec!));
  const a2a = {
    sendMessageP50AddedMs: round(a2aP50 - restP50, 3),
    sendMessageMet: a2aP50 - restP50 <= 1,
    streamsTurnsPerSecRatio: round(streamRate / restRate, 3),
    streamsMet: streamRate >= 0.9 * restRate,
  };
  printTable('A2A against REST (the same turn, the same rounds)', ['measure', 'A2A', 'REST', 'target', ''], [
    ['blocking SendMessage, p50', `${round(a2aP50, 3)} ms`, `${round(restP50, 3)} ms`, '≤ +1 ms', a2a.sendMessageMet ? `met: +${a2a.sendMessageP50AddedMs} ms` : `missed: +${a2a.sendMessageP50AddedMs} ms`],
    [`${SESSIONS} streams, turns/s`, round(streamRate), round(restRate), '≥ 90%', `${a2a.streamsMet ? 'met' : 'missed'}: ${round(100 * a2a.streamsTurnsPerSecRatio, 1)}%`],
  ]);
  const file = writeResult('protocols', { rounds, a2a });
  process.stdout.write(`\nwrote ${file}\n`);
}
