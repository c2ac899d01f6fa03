// `npm run bench -- guests`: guest agents over ACP (AGENT.md §6). The floor is the same guest driven
// directly by a bare ACP client (the SDK's `client()`), one process per session as turnhost runs
// them, in the same run:
//  - a turn's p50/p99, one session back to back and 64 sessions in a closed loop, through turnhost
//    (the daemon's socket, --agent acp) and directly; the guest is the SDK fixture
//    (test/fixtures/acp-guest.mjs: a reply in three chunks and a usage update);
//  - the time to make a session live: spawn, initialize and session/new, or session/load after a
//    release, for the SDK fixture, the Python example and Claude Code (claude-code-acp against a
//    fake Anthropic API), directly, and the first turn of a new session through turnhost;
//  - the memory of one live session (PSS of the guest's processes, from /proc) of each;
//  - the sandbox's cost (AGENT.md §7), in the same rounds: turnhost with `sandbox.mode off` against
//    sandboxed (making a session live, a turn's p50), and an HTTP request from inside a sandbox
//    through its proxy against the same request made unconfined and straight.
//  - a guest's home in the store (AGENT.md §6; bench/guest-homes.ts): a turn with its home synced
//    and without, the host's CPU to take Claude Code's home after a turn, and its restore.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { client, ndJsonStream, PROTOCOL_VERSION, type ClientConnection } from '@agentclientprotocol/sdk';
import { END_GRACE_MS } from '../agents/acp/guest-process.js';
import { descendants, endTree } from '../persistence/proc.js';
import { resolveSandbox, sandboxSchema } from '../agents/sandbox/sandbox-config.js';
import { Sandboxes } from '../agents/sandbox/sandbox.js';
import { FakeAnthropic } from '../test/helpers/fake-anthropic.js';
import { median, printTable, range, ROOT, round, ROUNDS, withTempDir, writeResult } from './common.js';
import { startDaemon, stopDaemon } from './daemon.js';
import { backToBack, CallbackTarget, closedLoop, sessionIds } from './driver.js';
import { RpcDriver } from './rpc-driver.js';
import { benchGuestHomes, type HomesRun } from './guest-homes.js';

const SESSIONS = 64;
const WARMUP_MS = 1000;
const MEASURE_MS = 4000;
const LATENCY_WARMUP = 50;
const LATENCY_TURNS = 500;
/** Claude Code's session start spawns its CLI: a few seconds each, so fewer samples. */
const START_SAMPLES = 5;

type Kind = 'sdk' | 'python' | 'claude';

interface GuestSpec {
  command: string;
  args: string[];
  env: Record<string, string>;
}

function guestSpec(kind: Kind, dir: string, fake: FakeAnthropic): GuestSpec {
  const state = join(dir, `state-${kind}`);
  mkdirSync(state, { recursive: true });
  const base = { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: state };
  switch (kind) {
    case 'sdk':
      return { command: process.execPath, args: [join(ROOT, 'test', 'fixtures', 'acp-guest.mjs'), '--state', state], env: base };
    case 'python':
      return { command: 'python3', args: [join(ROOT, 'examples', 'acp-guest.py')], env: { ...base, GUEST_STATE_DIR: state } };
    case 'claude':
      return {
        command: join(ROOT, 'node_modules', '.bin', 'claude-code-acp'),
        args: [],
        env: { ...base, ANTHROPIC_BASE_URL: fake.baseUrl, ANTHROPIC_API_KEY: 'sk-ant-bench', DISABLE_TELEMETRY: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_AUTOUPDATER: '1' },
      };
  }
}

/** One guest process with one ACP session, driven by the SDK's bare client. */
class DirectGuest {
  sessionId = '';
  private constructor(
    readonly child: ChildProcess,
    readonly connection: ClientConnection,
  ) {}

  static start(spec: GuestSpec, cwd: string): DirectGuest {
    const child = spawn(spec.command, spec.args, { cwd, env: spec.env, stdio: ['pipe', 'pipe', 'ignore'] });
    const app = client({ name: 'bench' }).onRequest('session/request_permission', () => ({ outcome: { outcome: 'cancelled' } }));
    const connection = app.connect(ndJsonStream(Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>, Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>));
    return new DirectGuest(child, connection);
  }

  async initialize(): Promise<boolean> {
    const init = await this.connection.agent.request('initialize', { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} });
    return init.agentCapabilities?.loadSession === true;
  }

  async newSession(cwd: string): Promise<void> {
    this.sessionId = (await this.connection.agent.request('session/new', { cwd, mcpServers: [] })).sessionId;
  }

  async loadSession(sessionId: string, cwd: string): Promise<void> {
    await this.connection.agent.request('session/load', { sessionId, cwd, mcpServers: [] });
    this.sessionId = sessionId;
  }

  async prompt(text: string): Promise<void> {
    await this.connection.agent.request('session/prompt', { sessionId: this.sessionId, prompt: [{ type: 'text', text }] });
  }

  /** Ends the guest and its children (Claude Code's CLI) as turnhost releases a session, and waits for all of them. */
  end(): Promise<void> {
    return endTree(this.child, END_GRACE_MS);
  }
}

/** The floor: each session a guest process of its own, prompted directly. */
class DirectTarget extends CallbackTarget {
  private readonly guests = new Map<string, DirectGuest>();

  static async open(spec: GuestSpec, sids: readonly string[], cwd: string): Promise<DirectTarget> {
    const target = new DirectTarget();
    await Promise.all(
      sids.map(async (sid) => {
        const guest = DirectGuest.start(spec, cwd);
        await guest.initialize();
        await guest.newSession(cwd);
        await guest.prompt('warm');
        target.guests.set(sid, guest);
      }),
    );
    return target;
  }

  submit(sid: string): void {
    this.guests.get(sid)!.prompt('hello').then(
      () => this.endListener(sid),
      (err: Error) => (this.failure = err),
    );
  }

  async close(): Promise<void> {
    await Promise.all([...this.guests.values()].map((guest) => guest.end()));
  }
}

interface TurnRun {
  oneP50Ms: number;
  oneP99Ms: number;
  manyP50Ms: number;
  manyP99Ms: number;
  turnsPerSec: number;
}

async function measureDirect(spec: GuestSpec, dir: string): Promise<TurnRun> {
  const one = await DirectTarget.open(spec, ['one'], dir);
  const latency = await backToBack(one, 'one', LATENCY_WARMUP, LATENCY_TURNS);
  await one.close();
  const sids = sessionIds('direct', SESSIONS);
  const many = await DirectTarget.open(spec, sids, dir);
  const loop = await closedLoop(many, sids, WARMUP_MS, MEASURE_MS);
  await many.close();
  return { oneP50Ms: latency.p50Ms, oneP99Ms: latency.p99Ms, manyP50Ms: loop.p50Ms, manyP99Ms: loop.p99Ms, turnsPerSec: loop.turnsPerSec };
}

type SandboxMode = 'off' | 'required';

function writeGuestConfig(dir: string, spec: GuestSpec, mode: SandboxMode): string {
  const file = join(dir, `agent-${mode}.json`);
  writeFileSync(file, JSON.stringify({ acp: { command: spec.command, args: spec.args, env: spec.env, max_live_sessions: SESSIONS + 2, cwd: dir }, sandbox: { mode } }));
  return file;
}

type TurnhostRun = TurnRun & { firstTurnMs: number };

async function measureTurnhost(spec: GuestSpec, dir: string, mode: SandboxMode): Promise<TurnhostRun> {
  const home = join(dir, `home-${mode}`);
  const daemon = await startDaemon(home, ['--agent', 'acp', '--agent-config', writeGuestConfig(dir, spec, mode)]);
  try {
    const driver = await RpcDriver.open(join(home, 'turnhost.sock'));
    const sids = sessionIds('th', SESSIONS);
    await driver.createSessions(['one', ...sids]);
    // Each session's first turn makes it live (spawn, initialize, session/new): measured apart.
    const first = await backToBack(driver, 'one', 0, 1);
    const latency = await backToBack(driver, 'one', LATENCY_WARMUP, LATENCY_TURNS);
    const live = waitForLive(driver, sids.length);
    for (const sid of sids) driver.submit(sid);
    await live;
    const loop = await closedLoop(driver, sids, WARMUP_MS, MEASURE_MS);
    driver.close();
    return { firstTurnMs: first.p50Ms, oneP50Ms: latency.p50Ms, oneP99Ms: latency.p99Ms, manyP50Ms: loop.p50Ms, manyP99Ms: loop.p99Ms, turnsPerSec: loop.turnsPerSec };
  } finally {
    await stopDaemon(daemon);
  }
}

/** Resolves once `count` warm-up turns have ended (their sessions are live). */
function waitForLive(driver: RpcDriver, count: number): Promise<void> {
  return new Promise((resolve) => {
    let ended = 0;
    driver.onEnd(() => ++ended === count && resolve());
  });
}

interface StartRun {
  newMs: number;
  loadMs: number;
  pssMiB: number;
}

/** Spawn to a session ready (initialize, session/new), a prompt, then the memory; then a new process's load of it. */
async function measureStart(spec: GuestSpec, dir: string): Promise<StartRun> {
  const t0 = performance.now();
  const guest = DirectGuest.start(spec, dir);
  const canLoad = await guest.initialize();
  await guest.newSession(dir);
  const newMs = performance.now() - t0;
  await guest.prompt('hello');
  const pssMiB = treePssKiB(guest.child.pid!) / 1024;
  const sessionId = guest.sessionId;
  await guest.end();
  let loadMs = Number.NaN;
  if (canLoad) {
    const t1 = performance.now();
    const again = DirectGuest.start(spec, dir);
    await again.initialize();
    await again.loadSession(sessionId, dir);
    loadMs = performance.now() - t1;
    await again.end();
  }
  return { newMs, loadMs, pssMiB };
}

/** The proportional set size of a process and its descendants (Claude Code's CLI is a child of the adapter), in KiB. */
function treePssKiB(root: number): number {
  let total = 0;
  for (const pid of [root, ...descendants(root).map((child) => child.pid)]) {
    try {
      total += Number(/^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? 0);
    } catch {
      // gone
    }
  }
  return total;
}

/** HTTP GETs to a server on 127.0.0.1, one after another, timed from inside the process that makes them. */
const GETS = 300;
const TIMED_GETS = `import sys, time, urllib.request
url = sys.argv[1]
took = []
for i in range(${GETS} + 20):
    t = time.perf_counter(); urllib.request.urlopen(url).read(); took.append(time.perf_counter() - t)
print(" ".join(str(x * 1000) for x in took[20:]))`;

/** A request's p50 from inside a sandbox through its proxy, and the same unconfined and straight to the server. */
async function measureProxyHop(dir: string): Promise<{ straightMs: number; proxiedMs: number }> {
  const server = createServer((_req, res) => res.end('ok'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  const home = join(dir, 'proxy-home');
  mkdirSync(home, { recursive: true });
  const config = resolveSandbox(sandboxSchema.parse({ allow_hosts: [new URL(url).host] }), { home, base: dir, modelUrls: [] });
  const quiet = { info: () => {}, warn: () => {} };
  const sandbox = await (await Sandboxes.start(config, quiet)).open('bench', dir);
  try {
    const p50 = async (command: string, args: string[], env: Record<string, string>) => median((await output(command, args, env, dir)).trim().split(' ').map(Number));
    const straight = await p50('python3', ['-c', TIMED_GETS, url], { PATH: process.env['PATH'] ?? '/usr/bin:/bin' });
    const inside = sandbox.wrap('python3', ['-c', TIMED_GETS, url], { PATH: process.env['PATH'] ?? '/usr/bin:/bin' });
    const proxied = await p50(inside.command, inside.args, inside.env);
    return { straightMs: straight, proxiedMs: proxied };
  } finally {
    await sandbox.close();
    server.close();
  }
}

function output(command: string, args: string[], env: Record<string, string>, cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'inherit'] });
    let text = '';
    child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve(text) : reject(new Error(`${command} exited ${code}`))));
  });
}

interface GuestRound {
  direct: TurnRun;
  turnhost: TurnhostRun;
  sandboxed: TurnhostRun;
  proxy: { straightMs: number; proxiedMs: number };
}

export async function benchGuests(): Promise<void> {
  const fake = await FakeAnthropic.start();
  try {
    const turnRounds: GuestRound[] = [];
    for (let n = 0; n < ROUNDS; n++) {
      process.stdout.write(`round ${n + 1} of ${ROUNDS}: turns…\n`);
      // Interleaved: the floor first in even rounds, turnhost first in odd ones; the sandbox's pair in turn.
      const round = await withTempDir(async (dir) => {
        const spec = guestSpec('sdk', dir, fake);
        const throughTurnhost = async () => {
          const first = await measureTurnhost(spec, dir, n % 2 === 0 ? 'off' : 'required');
          const second = await measureTurnhost(spec, dir, n % 2 === 0 ? 'required' : 'off');
          return n % 2 === 0 ? { turnhost: first, sandboxed: second } : { turnhost: second, sandboxed: first };
        };
        const proxy = await measureProxyHop(dir);
        if (n % 2 === 0) {
          const direct = await measureDirect(spec, dir);
          return { direct, ...(await throughTurnhost()), proxy };
        }
        const through = await throughTurnhost();
        return { direct: await measureDirect(spec, dir), ...through, proxy };
      });
      turnRounds.push(round);
    }
    const starts: Record<Kind, StartRun[]> = { sdk: [], python: [], claude: [] };
    for (const kind of ['sdk', 'python', 'claude'] as const) {
      process.stdout.write(`session starts: ${kind}…\n`);
      for (let i = 0; i < START_SAMPLES; i++) starts[kind].push(await withTempDir((dir) => measureStart(guestSpec(kind, dir, fake), dir)));
    }
    const homes = await benchGuestHomes(async (home, cwd) => {
      const spec = guestSpec('claude', cwd, fake);
      const guest = DirectGuest.start({ ...spec, env: { ...spec.env, HOME: home } }, cwd);
      await guest.initialize();
      await guest.newSession(cwd);
      return { prompt: (text) => guest.prompt(text), end: () => guest.end() };
    });
    report(turnRounds, starts, homes);
  } finally {
    await fake.close();
  }
}

function report(turnRounds: GuestRound[], starts: Record<Kind, StartRun[]>, homes: HomesRun): void {
  type Side = 'direct' | 'turnhost' | 'sandboxed';
  const of = (side: Side, pick: (r: TurnhostRun) => number) => turnRounds.map((r) => pick(r[side] as TurnhostRun));
  const row = (side: Side, label: string) => [
    label,
    round(median(of(side, (r) => r.oneP50Ms)), 3),
    round(median(of(side, (r) => r.oneP99Ms)), 3),
    round(median(of(side, (r) => r.manyP50Ms)), 2),
    round(median(of(side, (r) => r.manyP99Ms)), 2),
    round(median(of(side, (r) => r.turnsPerSec))),
    range(of(side, (r) => r.turnsPerSec)),
  ];
  printTable(
    `a guest's turn (the SDK fixture), directly and through turnhost, unconfined and sandboxed (median of ${ROUNDS} rounds; one session: ${LATENCY_TURNS} turns back to back; ${SESSIONS} sessions: a closed loop for ${MEASURE_MS / 1000} s)`,
    ['path', 'p50 ms (1)', 'p99 ms (1)', `p50 ms (${SESSIONS})`, `p99 ms (${SESSIONS})`, `turns/s (${SESSIONS})`, 'range'],
    [row('direct', 'bare ACP client (the floor)'), row('turnhost', 'through turnhost, sandbox.mode off'), row('sandboxed', 'through turnhost, sandboxed')],
  );
  const label: Record<Kind, string> = { sdk: 'SDK fixture (Node)', python: 'Python example (stdlib)', claude: 'Claude Code (claude-code-acp)' };
  printTable(
    `making a session live, directly (median of ${START_SAMPLES}): spawn, initialize and session/new; a new process's session/load; the memory of one live session after a turn (PSS of its processes)`,
    ['guest', 'new ms', 'load ms', 'memory MiB'],
    (['sdk', 'python', 'claude'] as const).map((kind) => [label[kind], round(median(starts[kind].map((s) => s.newMs))), round(median(starts[kind].map((s) => s.loadMs))), round(median(starts[kind].map((s) => s.pssMiB)), 1)]),
  );
  const first = (side: 'turnhost' | 'sandboxed') => median(turnRounds.map((r) => r[side].firstTurnMs));
  const p50 = (side: 'turnhost' | 'sandboxed') => median(turnRounds.map((r) => r[side].oneP50Ms));
  const straight = median(turnRounds.map((r) => r.proxy.straightMs));
  const proxied = median(turnRounds.map((r) => r.proxy.proxiedMs));
  printTable(
    `the sandbox's cost (AGENT.md §7: at most +50 ms to make a session live, +1 ms on a turn's p50), median of ${ROUNDS} rounds`,
    ['what', 'unconfined', 'sandboxed', 'cost'],
    [
      ['the first turn of a new session (made live, then its turn), ms', round(first('turnhost')), round(first('sandboxed')), `+${round(first('sandboxed') - first('turnhost'))} ms`],
      ["a turn's p50 (one session), ms", round(p50('turnhost'), 3), round(p50('sandboxed'), 3), `${signed(p50('sandboxed') - p50('turnhost'))} ms`],
      [`an HTTP request's p50 (${GETS} in a row): straight / through the sandbox's proxy, ms`, round(straight, 3), round(proxied, 3), `${signed(proxied - straight)} ms`],
    ],
  );
  const file = writeResult('guests', { turns: turnRounds, starts, homes });
  process.stdout.write(`wrote ${file}\n`);
}

function signed(ms: number): string {
  return `${ms >= 0 ? '+' : ''}${round(ms, 3)}`;
}
