// `npm run bench -- agent`: the model agent (`turnhost host --agent openai`) against a floor
// measured in the same run: a minimal program making the same `openai` SDK calls to the same
// fake server, writing nothing. Replies are 20 fragments; the fake server runs in this process.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_SYSTEM_PROMPT } from '../agents/model/config.js';
import { FakeOpenAI } from '../test/helpers/fake-openai.js';
import { CLI, ROOT, printTable, round, verdict, withTempDir, writeResult } from './common.js';
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

export async function benchAgent(): Promise<void> {
  const fake = await FakeOpenAI.start();
  fake.keepRequests = false;
  fake.fallback = () => ({ text: FRAGMENTS });
  const results: Record<string, ProgramResult> = {};
  try {
    for (const program of PROGRAMS) {
      process.stdout.write(`measuring ${program.name}…\n`);
      results[program.name] = await measure(program, fake);
    }
  } finally {
    await fake.close();
  }
  const turnhost = results['turnhost --agent openai']!;
  const floor = results['SDK floor']!;
  const at64 = (r: ProgramResult) => r.throughput.find((t) => t.sessions === 64)!.turnsPerSec;
  const ratio = at64(turnhost) / at64(floor);
  const p50Gap = turnhost.latency.p50Ms - floor.latency.p50Ms;
  const growth = (r: ProgramResult) => r.latency.lastFifthP50Ms - r.latency.firstFifthP50Ms;
  const growthOverFloor = growth(turnhost) - growth(floor);
  printTable(
    'turns per second (closed loop, 20-fragment replies from a fake server on 127.0.0.1)',
    ['program', ...PLAN.sessionCounts.map((n) => `${n} session${n > 1 ? 's' : ''}`), 'p50 ms', 'p99 ms'],
    Object.entries(results).map(([name, r]) => [name, ...r.throughput.map((t) => round(t.turnsPerSec)), round(r.latency.p50Ms, 3), round(r.latency.p99Ms, 3)]),
  );
  printTable(
    `one session of ${PLAN.latencyWarmup + PLAN.latencyTurns} turns, its history growing: p50 of the first and the last fifth of the ${PLAN.latencyTurns} measured`,
    ['program', 'first fifth p50 ms', 'last fifth p50 ms', 'growth ms'],
    Object.entries(results).map(([name, r]) => [name, round(r.latency.firstFifthP50Ms, 3), round(r.latency.lastFifthP50Ms, 3), round(growth(r), 3)]),
  );
  const targets = {
    vsFloorAt64: { value: round(ratio, 2), target: '>= 0.60', met: ratio >= 0.6 },
    oneSessionP50GapMs: { value: round(p50Gap, 3), target: '<= 1.5', met: p50Gap <= 1.5 },
    historyGrowthOverFloorMs: { value: round(growthOverFloor, 3), target: '<= 0.5', met: growthOverFloor <= 0.5 },
  };
  printTable('targets', ['measure', 'value', 'target', 'verdict'], Object.entries(targets).map(([k, t]) => [k, t.value, t.target, verdict(t.met)]));
  const file = writeResult('agent', { results, targets });
  process.stdout.write(`\nwrote ${file}\n`);
}
