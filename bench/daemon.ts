// `npm run bench -- daemon`: turns through the whole path (client → supervisor → host →
// client) next to the host alone in the same run, and the time a kill -9 of the host costs.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { CLI, median, printTable, range, ROOT, round, verdict, withTempDir, writeResult } from './common.js';
import { measurePath, PATH_PLAN, sessionIds, TurnProcess, type PathRun } from './driver.js';
import { RpcDriver } from './rpc-driver.js';

const { sessions: SESSIONS, rounds: ROUNDS } = PATH_PLAN;


export async function startDaemon(home: string, args: readonly string[] = []): Promise<ChildProcess> {
  const daemon = spawn(process.execPath, [CLI, 'daemon', '--home', home, '--workers', '64', ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, TURNHOST_LOG_LEVEL: 'info' },
  });
  let log = '';
  await new Promise<void>((resolve, reject) => {
    daemon.stderr!.on('data', (chunk: Buffer) => {
      log += chunk.toString();
      // Its socket and its host: either may be ready first.
      if (log.includes('"msg":"host ready"') && log.includes('"msg":"daemon listening"')) resolve();
    });
    daemon.once('exit', (code) => reject(new Error(`daemon exited (${code}): ${log}`)));
  });
  return daemon;
}

export async function stopDaemon(daemon: ChildProcess): Promise<void> {
  const exited = new Promise<void>((resolve) => daemon.once('exit', () => resolve()));
  daemon.kill('SIGTERM');
  await exited;
}

function measureHost(): Promise<PathRun> {
  return withTempDir(async (dir) => {
    const proc = new TurnProcess(process.execPath, [CLI, 'host', '--home', dir, '--workers', '64']);
    await proc.hello;
    const run = await measurePath(proc, 'host', { host: proc.pid });
    await proc.close();
    return run;
  });
}

function measureDaemon(): Promise<PathRun & { restartMs: number }> {
  return withTempDir(async (home) => {
    const child = await startDaemon(home);
    const driver = await RpcDriver.open(join(home, 'turnhost.sock'));
    await driver.createSessions([...sessionIds('tp', SESSIONS), 'tp-lat']);
    const run = await measurePath(driver, 'tp', { daemon: child.pid!, host: await driver.hostPid() });
    const restartMs = await driver.restartMs();
    driver.close();
    await stopDaemon(child);
    return { ...run, restartMs };
  });
}

/**
 * The same turns through the daemon's floor (bench/floors/pass-through.mjs): a process in the
 * middle that does only what a turn needs. What the hop cannot cost less than, on this machine.
 */
function measurePassThrough(): Promise<PathRun> {
  return withTempDir(async (home) => {
    const socketPath = join(home, 'pass-through.sock');
    const floor = spawn(process.execPath, [join(ROOT, 'bench/floors/pass-through.mjs'), CLI, home, socketPath], { stdio: ['ignore', 'pipe', 'inherit'] });
    const hostPid = await new Promise<number>((resolve, reject) => {
      floor.stdout!.on('data', (chunk: Buffer) => {
        const ready = /^ready (\d+)/m.exec(chunk.toString());
        if (ready) resolve(Number(ready[1]));
      });
      floor.once('exit', (code) => reject(new Error(`the pass-through floor exited (${code})`)));
    });
    const driver = await RpcDriver.open(socketPath);
    const run = await measurePath(driver, 'tp', { daemon: floor.pid!, host: hostPid });
    driver.close();
    await stopDaemon(floor);
    return run;
  });
}

/** Each measure of a round, as the median over the rounds. */
function medianRun(runs: readonly PathRun[]): { turnsPerSec: number; freshTurnsPerSec: number; p50Ms: number; p99Ms: number } {
  return {
    turnsPerSec: median(runs.map((r) => r.turnsPerSec)),
    freshTurnsPerSec: median(runs.map((r) => r.freshTurnsPerSec)),
    p50Ms: median(runs.map((r) => r.latency.p50Ms)),
    p99Ms: median(runs.map((r) => r.latency.p99Ms)),
  };
}

/** Each round's hop: what a path's turns/s lose against the host alone's in the same round. */
function hopCosts(runs: readonly PathRun[], hostRuns: readonly PathRun[], of: 'turnsPerSec' | 'freshTurnsPerSec'): number[] {
  return runs.map((run, i) => 1 - run[of] / hostRuns[i]![of]);
}

const percents = (costs: readonly number[]): string => costs.map((c) => `${round(100 * c, 1)}%`).join(', ');

export async function benchDaemon(): Promise<void> {
  // This machine's speed drifts by a fifth from one run to the next, more than the cost measured:
  // rounds of both paths, interleaved, and the median of each.
  const hostRuns: PathRun[] = [];
  const daemonRuns: (PathRun & { restartMs: number })[] = [];
  const floorRuns: PathRun[] = [];
  for (let n = 1; n <= ROUNDS; n++) {
    process.stdout.write(`round ${n} of ${ROUNDS}: the host alone, through the daemon, then through the pass-through floor…\n`);
    hostRuns.push(await measureHost());
    daemonRuns.push(await measureDaemon());
    floorRuns.push(await measurePassThrough());
  }
  const host = medianRun(hostRuns);
  const daemon = { ...medianRun(daemonRuns), restartMs: median(daemonRuns.map((r) => r.restartMs)) };
  const passThrough = medianRun(floorRuns);
  const hops = hopCosts(daemonRuns, hostRuns, 'turnsPerSec');
  const freshHops = hopCosts(daemonRuns, hostRuns, 'freshTurnsPerSec');
  const hopMedian = median(hops);
  const p50CostMs = daemon.p50Ms - host.p50Ms;
  const windows = `${PATH_PLAN.measureMs / 1000} s each`;
  printTable(
    `turns through the daemon vs the host alone (${SESSIONS} sessions, then one session back to back; median of ${ROUNDS} rounds; turns/s in the loop's first window, from ${PATH_PLAN.warmupMs / 1000} s after the processes started, and in the window right after it, ${windows})`,
    ['path', 'turns/s, first window', `turns/s at ${SESSIONS}`, 'range', 'p50 ms', 'p99 ms'],
    [
      ['host alone (stdin/stdout)', round(host.freshTurnsPerSec), round(host.turnsPerSec), range(hostRuns.map((r) => r.turnsPerSec)), round(host.p50Ms, 3), round(host.p99Ms, 3)],
      ['client → daemon → host', round(daemon.freshTurnsPerSec), round(daemon.turnsPerSec), range(daemonRuns.map((r) => r.turnsPerSec)), round(daemon.p50Ms, 3), round(daemon.p99Ms, 3)],
      ['client → pass-through floor → host', round(passThrough.freshTurnsPerSec), round(passThrough.turnsPerSec), range(floorRuns.map((r) => r.turnsPerSec)), round(passThrough.p50Ms, 3), round(passThrough.p99Ms, 3)],
    ],
  );
  process.stdout.write(`hop cost per round: ${percents(hops)} (the pass-through floor's: ${percents(hopCosts(floorRuns, hostRuns, 'turnsPerSec'))})\n`);
  process.stdout.write(`in the first window: ${percents(freshHops)}, median ${round(100 * median(freshHops), 1)}% (the floor's: ${percents(hopCosts(floorRuns, hostRuns, 'freshTurnsPerSec'))})\n`);
  // Where the hop's cost lands: CPU per turn of each process (two cores are shared by all of them).
  const cpu = (runs: readonly PathRun[], name: string) => (runs[0]!.cpuUsPerTurn[name] === undefined ? '–' : round(median(runs.map((r) => r.cpuUsPerTurn[name]!))));
  printTable(
    'CPU per turn of the closed loop\'s second window, µs (user + system; median of the rounds)',
    ['path', 'benchmark client', 'daemon', 'host'],
    [
      ['host alone', cpu(hostRuns, 'client'), cpu(hostRuns, 'daemon'), cpu(hostRuns, 'host')],
      ['through the daemon', cpu(daemonRuns, 'client'), cpu(daemonRuns, 'daemon'), cpu(daemonRuns, 'host')],
      ['through the pass-through floor', cpu(floorRuns, 'client'), cpu(floorRuns, 'daemon'), cpu(floorRuns, 'host')],
    ],
  );
  const worst = Math.max(...hops);
  const targets = {
    hopThroughputCost: { value: `${round(hopMedian * 100, 1)}%`, target: '<= 20%', met: hopMedian <= 0.2 },
    hopWorstRound: { value: `${round(worst * 100, 1)}%`, target: '<= 30%', met: worst <= 0.3 },
    hopP50CostMs: { value: round(p50CostMs, 3), target: '<= 1', met: p50CostMs <= 1 },
    firstRestartMs: { value: round(daemon.restartMs, 1), target: '<= 1000', met: daemon.restartMs <= 1000 },
  };
  printTable('targets', ['measure', 'value', 'target', 'verdict'], Object.entries(targets).map(([k, t]) => [k, t.value, t.target, verdict(t.met)]));
  const file = writeResult('daemon', { sessions: SESSIONS, rounds: ROUNDS, host, daemon, passThrough, runs: { host: hostRuns, daemon: daemonRuns, passThrough: floorRuns }, targets });
  process.stdout.write(`\nwrote ${file}\n`);
}
