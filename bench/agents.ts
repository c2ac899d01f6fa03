// `npm run bench -- agents`: what a catalogue of agents costs (AGENT.md §8).
//  - A catalogue of 10 agents of which one is used, against a single-agent daemon (the script
//    agent, no config), in paired rounds: a turn's p50 of one session back to back, and the RSS of
//    the daemon and the host after those turns. Target: nothing measurable (within the rounds'
//    own spread).
//  - Start to the host's hello, in more paired rounds of its own (one start varies by ±10% here,
//    more than the cost looked for), the order alternating. Target: not measurably slower, by a
//    sign test: the catalogue slower in so many rounds that chance would do it less than 1 time
//    in 20 is measurable.
//  - A session's first turn with an agent not yet made (the model agent, against a fake
//    OpenAI-compatible server on 127.0.0.1), less the first turn of a second session of the same
//    agent once made: what making it cost in the daemon. The floor is making that agent alone, in
//    a fresh process, from the same file by the same loader (bench/floors/make-agent.mjs).
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { FakeOpenAI } from '../test/helpers/fake-openai.js';
import { PYTHON_GUEST } from '../test/helpers/guests.js';
import { median, printTable, range, ROOT, round, rssMiB, verdict, withTempDir, writeResult } from './common.js';
import { startDaemon, stopDaemon } from './daemon.js';
import { backToBack } from './driver.js';
import { RpcDriver } from './rpc-driver.js';

const ROUNDS = 5;
const HELLO_ROUNDS = 21;
/** A one-sided sign test's bound: below it, the catalogue's start is measurably slower. */
const SIGNIFICANCE = 0.05;
const WARMUP_TURNS = 200;
const TURNS = 1000;
/** Besides the agent used: this many of each kind (model, guest, script), never used. */
const UNUSED_PER_KIND = 3;
const CATALOGUE_SIZE = 1 + 3 * UNUSED_PER_KIND;

interface DaemonRun {
  turnP50Ms: number;
  rssMiB: { daemon: number; host: number };
}

interface FirstTurnRun {
  /** The first turn of a session whose agent the host had not made yet. */
  unmadeMs: number;
  /** The first turn of another session of that agent, made by then. */
  madeMs: number;
  /** Making the agent alone, in a fresh process. */
  aloneMs: number;
}

/** The agent used (`quick`, the default) and UNUSED_PER_KIND of each kind. */
function catalogue(baseUrl: string): object {
  const agents: Record<string, object> = { quick: { kind: 'script', label: 'Quick' } };
  for (let i = 1; i <= UNUSED_PER_KIND; i++) {
    agents[`model-${i}`] = { kind: 'openai', label: `Model ${i}`, model: 'm1', models: ['m1', 'm2'], base_url: baseUrl };
    agents[`guest-${i}`] = { kind: 'acp', acp: { command: 'python3', args: [PYTHON_GUEST] } };
    agents[`script-${i}`] = { kind: 'script', members: false };
  }
  return { default_agent: 'quick', agents };
}

async function runDaemon(home: string, args: readonly string[]): Promise<DaemonRun> {
  const daemon = await startDaemon(home, args);
  const driver = await RpcDriver.open(join(home, 'turnhost.sock'));
  try {
    await driver.createSessions(['one']);
    const latency = await backToBack(driver, 'one', WARMUP_TURNS, TURNS);
    // Both run: a reading is there.
    const rss = { daemon: rssMiB(daemon.pid!)!, host: rssMiB(await driver.hostPid())! };
    return { turnP50Ms: latency.p50Ms, rssMiB: rss };
  } finally {
    driver.close();
    await stopDaemon(daemon);
  }
}

/** One daemon's start to its host's hello, then its stop. */
async function helloMs(home: string, args: readonly string[]): Promise<number> {
  const started = performance.now();
  const daemon = await startDaemon(home, args);
  const ms = performance.now() - started;
  await stopDaemon(daemon);
  return ms;
}

/** Start to hello of each daemon, in paired rounds whose order alternates. */
async function pairedHellos(baseUrl: string): Promise<{ single: number; catalogue: number }[]> {
  const pairs: { single: number; catalogue: number }[] = [];
  for (let n = 1; n <= HELLO_ROUNDS; n++) {
    process.stdout.write(`start to hello, round ${n} of ${HELLO_ROUNDS}\n`);
    await withTempDir(async (dir) => {
      const config = join(dir, 'agents.json');
      writeFileSync(config, JSON.stringify(catalogue(baseUrl)));
      const startSingle = () => helloMs(join(dir, 'single'), []);
      const startCatalogue = () => helloMs(join(dir, 'many'), ['--agent-config', config]);
      if (n % 2 === 1) pairs.push({ single: await startSingle(), catalogue: await startCatalogue() });
      else pairs.push({ catalogue: await startCatalogue(), single: await startSingle() });
    });
  }
  return pairs;
}

/** The chance of `slower` or more of `n` rounds slower when neither daemon is: P(X >= slower), X ~ Binomial(n, 1/2). */
function signTestP(slower: number, n: number): number {
  let ways = 0;
  let choose = 1;
  for (let k = 0; k <= n; k++) {
    if (k >= slower) ways += choose;
    choose = (choose * (n - k)) / (k + 1);
  }
  return ways / 2 ** n;
}

async function firstTurnMs(driver: RpcDriver, sid: string, agent: string): Promise<number> {
  await driver.call('session.create', { session_id: sid, agent });
  return (await backToBack(driver, sid, 0, 1)).p50Ms;
}

async function firstTurns(home: string, config: string): Promise<FirstTurnRun> {
  const daemon = await startDaemon(home, ['--agent-config', config]);
  const driver = await RpcDriver.open(join(home, 'turnhost.sock'));
  try {
    const unmadeMs = await firstTurnMs(driver, 'first', 'model-1');
    const madeMs = await firstTurnMs(driver, 'second', 'model-1');
    const { stdout } = await promisify(execFile)(process.execPath, [join(ROOT, 'bench', 'floors', 'make-agent.mjs'), config, home, 'model-1', 'openai'], { timeout: 60_000 });
    return { unmadeMs, madeMs, aloneMs: Number(stdout.trim()) };
  } finally {
    driver.close();
    await stopDaemon(daemon);
  }
}

function summary(runs: readonly DaemonRun[]) {
  return {
    turnP50Ms: median(runs.map((r) => r.turnP50Ms)),
    daemonRssMiB: median(runs.map((r) => r.rssMiB.daemon)),
    hostRssMiB: median(runs.map((r) => r.rssMiB.host)),
  };
}

/**
 * "Nothing measurable": the catalogue's median no higher than the single agent's slowest (or
 * largest) round, give or take `tolerance` (RSS moves by a few hundred KiB from one start to the next).
 */
function withinSpread(value: number, floor: readonly number[], tolerance = 0): boolean {
  return value <= Math.max(...floor) + tolerance;
}

/** The RSS's tolerance, MiB. */
const RSS_NOISE_MIB = 1;

export async function benchAgents(): Promise<void> {
  const fake = await FakeOpenAI.start();
  fake.keepRequests = false;
  const single: DaemonRun[] = [];
  const many: DaemonRun[] = [];
  const first: FirstTurnRun[] = [];
  let hellos: { single: number; catalogue: number }[] = [];
  try {
    for (let n = 1; n <= ROUNDS; n++) {
      process.stdout.write(`round ${n} of ${ROUNDS}: a single-agent daemon, one with a catalogue of ${CATALOGUE_SIZE}, then a first turn with an agent not yet made…\n`);
      await withTempDir(async (dir) => {
        const config = join(dir, 'agents.json');
        writeFileSync(config, JSON.stringify(catalogue(fake.baseUrl)));
        single.push(await runDaemon(join(dir, 'single'), []));
        many.push(await runDaemon(join(dir, 'many'), ['--agent-config', config]));
        first.push(await firstTurns(join(dir, 'first'), config));
      });
    }
    hellos = await pairedHellos(fake.baseUrl);
  } finally {
    await fake.close();
  }
  const one = summary(single);
  const ten = summary(many);
  const spread = (runs: readonly DaemonRun[], of: (r: DaemonRun) => number, digits: number) => range(runs.map(of), digits);
  printTable(
    `a catalogue of ${CATALOGUE_SIZE} agents, one used, against a single-agent daemon (median of ${ROUNDS} paired rounds; a turn's p50 over ${TURNS} turns back to back)`,
    ['daemon', "a turn's p50 ms", 'range', 'RSS daemon MiB', 'RSS host MiB'],
    [
      ['single agent (script)', round(one.turnP50Ms, 3), spread(single, (r) => r.turnP50Ms, 3), round(one.daemonRssMiB, 1), round(one.hostRssMiB, 1)],
      [`catalogue of ${CATALOGUE_SIZE}`, round(ten.turnP50Ms, 3), spread(many, (r) => r.turnP50Ms, 3), round(ten.daemonRssMiB, 1), round(ten.hostRssMiB, 1)],
    ],
  );
  const differences = hellos.map((h) => h.catalogue - h.single);
  const slower = differences.filter((d) => d > 0).length;
  const chance = signTestP(slower, HELLO_ROUNDS);
  const hello = { singleMs: median(hellos.map((h) => h.single)), catalogueMs: median(hellos.map((h) => h.catalogue)), differenceMs: median(differences), slower, signTestP: chance };
  printTable(
    `start to the host's hello (${HELLO_ROUNDS} paired rounds, the order alternating)`,
    ['daemon', 'median ms', 'range'],
    [
      ['single agent (script)', round(hello.singleMs), range(hellos.map((h) => h.single), 0)],
      [`catalogue of ${CATALOGUE_SIZE}`, round(hello.catalogueMs), range(hellos.map((h) => h.catalogue), 0)],
      ['the difference, round by round', round(hello.differenceMs), range(differences, 0)],
    ],
  );
  process.stdout.write(`the catalogue slower in ${slower} of ${HELLO_ROUNDS} rounds: that often or more by chance, p = ${round(chance, 3)}\n`);
  const costs = first.map((r) => r.unmadeMs - r.madeMs);
  const making = { unmadeMs: median(first.map((r) => r.unmadeMs)), madeMs: median(first.map((r) => r.madeMs)), costMs: median(costs), aloneMs: median(first.map((r) => r.aloneMs)) };
  printTable(
    `a session's first turn with an agent not yet made (the model agent; median of ${ROUNDS} rounds)`,
    ['what', 'ms', 'range'],
    [
      ['first turn, the agent not yet made', round(making.unmadeMs, 1), range(first.map((r) => r.unmadeMs), 1)],
      ['first turn of another session, the agent made', round(making.madeMs, 1), range(first.map((r) => r.madeMs), 1)],
      ['the difference: making it in the daemon', round(making.costMs, 1), range(costs, 1)],
      ['the floor: making it alone, in a fresh process', round(making.aloneMs, 1), range(first.map((r) => r.aloneMs), 1)],
    ],
  );
  // Making it in the daemon may not cost more than making it alone; the host's first turn also
  // pays its own first HTTP connection to the model, a few ms on 127.0.0.1.
  const targets = {
    startToHello: { value: `slower in ${slower} of ${HELLO_ROUNDS}`, target: `not measurably slower (sign test p >= ${SIGNIFICANCE})`, met: chance >= SIGNIFICANCE },
    turnP50Ms: { value: round(ten.turnP50Ms, 3), target: `<= ${round(Math.max(...single.map((r) => r.turnP50Ms)), 3)}`, met: withinSpread(ten.turnP50Ms, single.map((r) => r.turnP50Ms)) },
    hostRssMiB: { value: round(ten.hostRssMiB, 1), target: `<= ${round(Math.max(...single.map((r) => r.rssMiB.host)) + RSS_NOISE_MIB, 1)}`, met: withinSpread(ten.hostRssMiB, single.map((r) => r.rssMiB.host), RSS_NOISE_MIB) },
    daemonRssMiB: { value: round(ten.daemonRssMiB, 1), target: `<= ${round(Math.max(...single.map((r) => r.rssMiB.daemon)) + RSS_NOISE_MIB, 1)}`, met: withinSpread(ten.daemonRssMiB, single.map((r) => r.rssMiB.daemon), RSS_NOISE_MIB) },
    makingMs: { value: round(making.costMs, 1), target: `<= ${round(making.aloneMs * 1.25 + 5, 1)} (alone × 1.25 + 5 ms)`, met: making.costMs <= making.aloneMs * 1.25 + 5 },
  };
  printTable('targets', ['measure', 'value', 'target', 'verdict'], Object.entries(targets).map(([k, t]) => [k, t.value, t.target, verdict(t.met)]));
  const file = writeResult('agents', { rounds: ROUNDS, helloRounds: HELLO_ROUNDS, catalogueSize: CATALOGUE_SIZE, turns: TURNS, single: one, catalogue: ten, hello, making, runs: { single, catalogue: many, firstTurns: first, hellos }, targets });
  process.stdout.write(`\nwrote ${file}\n`);
}
