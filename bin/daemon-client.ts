// Finding and starting the daemon of a home, for the CLI commands.
import { spawn } from 'node:child_process';
import { closeSync, constants, fstatSync, mkdirSync, openSync, readSync } from 'node:fs';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { cliEntry } from './build-info.js';
import { homePaths } from '../protocol/home-paths.js';
import { RpcClient } from '../client/rpc-connection.js';
import { connect, type TurnhostClient } from '../client/turnhost-client.js';

export const EXIT_NOT_RUNNING = 3;

const START_TIMEOUT_MS = 15_000;
const POLL_MS = 50;
/** A daemon that closed its socket to end itself is gone within this. */
const EXIT_WAIT_MS = 5_000;

/** A client of the home's daemon, or null when none answers there. */
/** Runs `body` with a client of the running daemon; says so (exit 3) when none runs. */
export async function withDaemon(home: string, name: string, body: (client: RpcClient) => Promise<number>): Promise<number> {
  const client = await connectDaemon(home);
  if (client === null) {
    process.stderr.write(`turnhost ${name}: no daemon is running in ${home} (turnhost start)\n`);
    return EXIT_NOT_RUNNING;
  }
  try {
    return await body(client);
  } finally {
    client.close();
  }
}

export async function connectDaemon(home: string): Promise<RpcClient | null> {
  try {
    return await RpcClient.connect(homePaths(home).socket);
  } catch {
    return null;
  }
}

export type Launch = { ok: true; pid: number } | { ok: false; message: string; alreadyRunning: boolean };

interface HostState {
  host: { state: string; last_error: string | null };
}

/**
 * Resolves once the host has said hello; rejects with the host's own error when it failed (its
 * agent cannot load, a crash loop) or did not come up within the bound.
 */
export async function waitForHost(status: () => Promise<HostState>, timeoutMs = START_TIMEOUT_MS): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const { host } = await status();
    if (host.state === 'running') return;
    if (host.state === 'failed') throw new Error(`the host did not come up: ${host.last_error ?? 'crash loop'}`);
    if (performance.now() > deadline) {
      throw new Error(`the host did not say hello within ${timeoutMs / 1000} s${host.last_error ? `: ${host.last_error}` : ''}`);
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** Starts `turnhost daemon` in the background and waits until its host has said hello. */
export async function launchDaemon(home: string, hostArgs: string[]): Promise<Launch> {
  const paths = homePaths(home);
  mkdirSync(dirname(paths.log), { recursive: true, mode: 0o700 });
  // Whatever the daemon says before its own log is open goes to the same file.
  const early = openSync(paths.log, constants.O_WRONLY | constants.O_CREAT | constants.O_APPEND, 0o600);
  const logStart = fstatSync(early).size;
  const child = spawn(process.execPath, [cliEntry(), 'daemon', '--home', home, ...hostArgs], { detached: true, cwd: home, stdio: ['ignore', 'ignore', early] });
  closeSync(early);
  let exitCode: number | null = null;
  const exited = new Promise<number>((resolve) => child.once('exit', (code) => resolve((exitCode = code ?? -1))));
  child.unref();
  // Why it exited is its last line on stderr, which went to the log (an unreachable store, a held
  // lock, a bad option, a first host that could not load its agent).
  const refused = (code: number): Launch => {
    const said = lastSaid(paths.log, logStart);
    return {
      ok: false,
      alreadyRunning: said !== null && /a daemon is already running/.test(said),
      message: said === null ? `the daemon exited with code ${code}; see ${paths.log}` : `the daemon exited: ${said}`,
    };
  };
  const deadline = performance.now() + START_TIMEOUT_MS;
  while (performance.now() < deadline) {
    if (exitCode !== null) return refused(exitCode);
    const client = await connectDaemon(home);
    if (client) {
      try {
        const status = await client.call<{ supervisor: { pid: number } }>('host.status', {}, START_TIMEOUT_MS);
        await waitForHost(() => client.call<HostState>('host.status', {}, START_TIMEOUT_MS), Math.max(0, deadline - performance.now()));
        return { ok: true, pid: status.supervisor.pid };
      } catch (err) {
        // The daemon ended itself (its first host refused): it is gone, or nearly.
        if (client.isClosed) return refused(await Promise.race([exited, sleep(EXIT_WAIT_MS, -1)]));
        // Nothing half-started stays behind: the daemon of a host that cannot run is stopped.
        await client.call('daemon.shutdown', { wait: 0 }, START_TIMEOUT_MS).catch(() => {});
        return { ok: false, alreadyRunning: false, message: (err as Error).message };
      } finally {
        client.close();
      }
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  return { ok: false, alreadyRunning: false, message: `the daemon did not answer within ${START_TIMEOUT_MS / 1000} s; see ${paths.log}` };
}

/** A client library connection to the home's daemon, started with `hostArgs` when none runs; or why there is none. */
export async function connectOrLaunch(home: string, hostArgs: string[]): Promise<TurnhostClient | string> {
  const socket = homePaths(home).socket;
  const running = await connect({ socket }).catch(() => null);
  if (running !== null) return running;
  const launch = await launchDaemon(home, hostArgs);
  const launched = launch.ok || launch.alreadyRunning ? await connect({ socket }).catch(() => null) : null;
  return launched ?? `could not start the daemon: ${launch.ok ? 'it did not answer' : launch.message}`;
}

/** The bytes a starting daemon's stderr may have written to the log before it exited: its reason is the last of its own lines. */
const SAID_BYTES = 64 * 1024;

function lastSaid(log: string, from: number): string | null {
  let text: string;
  try {
    const fd = openSync(log, 'r');
    try {
      const buffer = Buffer.alloc(SAID_BYTES);
      const read = readSync(fd, buffer, 0, SAID_BYTES, from);
      text = buffer.subarray(0, read).toString('utf8');
    } finally {
      closeSync(fd);
    }
  } catch {
    return null;
  }
  const line = text.split('\n').reverse().find((l) => l.startsWith('turnhost daemon: '));
  return line === undefined ? null : line.slice('turnhost daemon: '.length);
}
