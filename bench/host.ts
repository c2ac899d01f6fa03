// `npm run bench -- host`: turnhost's compute host against two floors measured in the same run.
import { join } from 'node:path';
import { CLI, ROOT, printTable, round, verdict, withTempDir, writeResult } from './common.js';
import { measureProgram, TurnProcess, type LoadPlan, type ProgramResult } from './driver.js';

const PLAN: LoadPlan = { sessionCounts: [1, 8, 64], warmupMs: 500, measureMs: 3000, latencyWarmup: 300, latencyTurns: 3000 };

interface Program {
  name: string;
  start(dir: string): TurnProcess;
}

const PROGRAMS: Program[] = [
  { name: 'turnhost', start: (dir) => new TurnProcess(process.execPath, [CLI, 'host', '--home', dir, '--workers', '64']) },
  { name: 'naive floor', start: (dir) => new TurnProcess(process.execPath, [join(ROOT, 'bench/floors/naive.mjs'), join(dir, 'floor.db')]) },
  { name: 'group-commit floor', start: (dir) => new TurnProcess(process.execPath, [join(ROOT, 'bench/floors/group-commit.mjs'), join(dir, 'floor.db')]) },
];

async function measure(program: Program): Promise<ProgramResult> {
  return withTempDir((dir) => measureProgram(program.start(dir), PLAN));
}

export async function benchHost(): Promise<void> {
  const results: Record<string, ProgramResult> = {};
  for (const program of PROGRAMS) {
    process.stdout.write(`measuring ${program.name}…\n`);
    results[program.name] = await measure(program);
  }
  const at64 = (name: string) => results[name]!.throughput.find((t) => t.sessions === 64)!.turnsPerSec;
  const turnhost = results['turnhost']!;
  const vsNaive = at64('turnhost') / at64('naive floor');
  const vsGroup = at64('turnhost') / at64('group-commit floor');
  printTable(
    'turns per second (closed loop, one-word prompts, script agent)',
    ['program', ...PLAN.sessionCounts.map((n) => `${n} session${n > 1 ? 's' : ''}`), 'p50 ms', 'p99 ms'],
    Object.entries(results).map(([name, r]) => [
      name,
      ...r.throughput.map((t) => round(t.turnsPerSec)),
      round(r.latency.p50Ms, 3),
      round(r.latency.p99Ms, 3),
    ]),
  );
  const targets = {
    vsNaiveAt64: { value: round(vsNaive, 2), target: '>= 0.50', met: vsNaive >= 0.5 },
    vsGroupCommitAt64: { value: round(vsGroup, 2), target: '>= 0.70 (aim)', met: vsGroup >= 0.7 },
    oneSessionP99Ms: { value: round(turnhost.latency.p99Ms, 3), target: '<= 2', met: turnhost.latency.p99Ms <= 2 },
  };
  printTable(
    'targets',
    ['measure', 'value', 'target', 'verdict'],
    Object.entries(targets).map(([k, t]) => [k, t.value, t.target, verdict(t.met)]),
  );
  const file = writeResult('host', { results, targets });
  process.stdout.write(`\nwrote ${file}\n`);
}
