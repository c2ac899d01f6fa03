// `npm run bench -- agent`: the model agent (`turnhost host --agent openai`) against a floor
// measured in the same run: a minimal program making the same `openai` SDK calls to the same
// fake server, writing nothing. Replies are 20 fragments; the fake server runs in this process.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_SYSTEM_PROMPT } from '../agents/model/config.js';
import { FakeOpenAI } from '../test/helpers/fake-openai.js';
import { CLI, median, printTable, range, ROOT, round, ROUNDS, verdict, withTempDir, writeResult } from './common.js';
import { measureProgram, TurnProcess, type LoadPlan, type ProgramResult } from './driver.js';

const PLAN: LoadPlan = { sessionCounts: [1, 64], warmupMs: 500, measureMs: 3000, latencyWarmup: 100, latencyTurns: 1000 };
const FRAGMENTS = Array.from({ length: 20 }, (_, i) => `word${i} `);
const MODEL = 'bench-model';

interface Program {
  name: string;
  start(dir: string, baseUrl: string): TurnProcess;
}

const PROGRAMS: Program[] = [
  {
    name: 'turnhost --agent openai',
    start(dir, baseUrl) {
      writeFileSync(join(dir, 'agent.json'), JSON.stringify({ model: MODEL, base_url: baseUrl }));
      return new TurnProcess(process.execPath, [CLI, 'host', '--home', dir, '--agent', 'openai', '--workers', '64']);
    },
  },
  {
    name: 'SDK floor',
    start: (_dir, baseUrl) => new TurnProcess(process.execPath, [join(ROOT, 'bench/floors/openai-floor.mjs'), baseUrl, MODEL, DEFAULT_SYSTEM_PROMPT]),
  },
];

async function measure(program: Program, fake: FakeOpenAI): Promise<ProgramResult> {
  return withTempDir((dir) => measureProgram(program.start(dir, fake.baseUrl), PLAN));
}

/** How much one session's p50 grew from the first fifth of its turns to the last. */
const growth = (r: ProgramResult) => r.latency.lastFifthP50Ms - r.latency.firstFifthP50Ms;

export async function benchAgent(): Promise<void> {
  const fake = await FakeOpenAI.start();
  fake.keepRequests = false;
  fake.fallback = () => ({ text: FRAGMENTS });
  const rounds: Record<string, ProgramResult>[] = [];
  try {
    for (let n = 1; n <= ROUNDS; n++) {
      const results: Record<string, ProgramResult> = {};
      for (const program of PROGRAMS) {
        process.stdout.write(`round ${n} of ${ROUNDS}: ${program.name}…\n`);
        results[program.name] = await measure(program, fake);
      }
      rounds.push(results);
    }
  } finally {
    await fake.close();
  }
  const TURNHOST = 'turnhost --agent openai';
  const FLOOR = 'SDK floor';
  const of = (name: string, figure: (r: ProgramResult) => number) => median(rounds.map((r) => figure(r[name]!)));
  // A difference between the two programs is taken within each round, then its median.
  const within = (figure: (turnhost: ProgramResult, floor: ProgramResult) => number) => rounds.map((r) => figure(r[TURNHOST]!, r[FLOOR]!));
  const at = (i: number) => (r: ProgramResult) => r.throughput[i]!.turnsPerSec;
  const at64 = at(PLAN.sessionCounts.indexOf(64));
  const ratios = within((t, f) => at64(t) / at64(f));
  const p50Gaps = within((t, f) => t.latency.p50Ms - f.latency.p50Ms);
  const growthsOverFloor = within((t, f) => growth(t) - growth(f));
  const names = [TURNHOST, FLOOR];
  printTable(
    `turns per second (closed loop, 20-fragment replies from a fake server on 127.0.0.1; median of ${ROUNDS} interleaved rounds)`,
    ['program', ...PLAN.sessionCounts.map((n) => `${n} session${n > 1 ? 's' : ''}`), 'p50 ms', 'p99 ms'],
    names.map((name) => [name, ...PLAN.sessionCounts.map((_, i) => round(of(name, at(i)))), round(of(name, (r) => r.latency.p50Ms), 3), round(of(name, (r) => r.latency.p99Ms), 3)]),
  );
  printTable(
    `one session of ${PLAN.latencyWarmup + PLAN.latencyTurns} turns, its history growing: p50 of the first and the last fifth of the ${PLAN.latencyTurns} measured`,
    ['program', 'first fifth p50 ms', 'last fifth p50 ms', 'growth ms'],
    names.map((name) => [name, round(of(name, (r) => r.latency.firstFifthP50Ms), 3), round(of(name, (r) => r.latency.lastFifthP50Ms), 3), round(of(name, growth), 3)]),
  );
  const ratio = median(ratios);
  const p50Gap = median(p50Gaps);
  const growthOverFloor = median(growthsOverFloor);
  const targets = {
    vsFloorAt64: { value: round(ratio, 2), rounds: range(ratios, 2), target: '>= 0.60', met: ratio >= 0.6 },
    oneSessionP50GapMs: { value: round(p50Gap, 3), rounds: range(p50Gaps, 3), target: '<= 1.5', met: p50Gap <= 1.5 },
    historyGrowthOverFloorMs: { value: round(growthOverFloor, 3), rounds: range(growthsOverFloor, 3), target: '<= 0.5', met: growthOverFloor <= 0.5 },
  };
  printTable('targets (median of the rounds; range over them)', ['measure', 'value', 'rounds', 'target', 'verdict'], Object.entries(targets).map(([k, t]) => [k, t.value, t.rounds, t.target, verdict(t.met)]));
  const file = writeResult('agent', { rounds, targets });
  process.stdout.write(`\nwrote ${file}\n`);
}
