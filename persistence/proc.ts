// The real process probe: /proc on Linux, signals for liveness.
import { readFileSync } from 'node:fs';
import type { ProcessProbe } from './registry.js';

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function readCommandLine(pid: number): string[] | null {
  try {
    const raw = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return raw.split('\0').filter((part) => part !== '');
  } catch {
    return null;
  }
}

/** Field 22 of /proc/<pid>/stat (after the parenthesised command, which may hold spaces). */
export function readStartTime(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const value = Number(fields[22 - 3]);
    return Number.isFinite(value) ? value : null;
  } catch {
    return null;
  }
}

/** A zombie has exited; only its parent's wait() is missing. */
export function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return false;
  }
}

const POLL_MS = 50;

/** Resolves true once the pid is gone (or a zombie), false after timeoutMs. */
export async function waitGone(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if (!processAlive(pid) || isZombie(pid)) return true;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  return !processAlive(pid) || isZombie(pid);
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // already gone
  }
}

export interface TerminateTimes {
  graceMs: number;
  killWaitMs: number;
}

/**
 * SIGTERM, then SIGCONT (a stopped process could not act on the SIGTERM), a bounded wait, then
 * SIGKILL. Signals go to the host's process group: an agent's own children go with it.
 */
export function realProbe(times: TerminateTimes): ProcessProbe {
  return {
    alive: (pid) => processAlive(pid) && !isZombie(pid),
    commandLine: readCommandLine,
    startTime: readStartTime,
    async terminate(pid) {
      signal(-pid, 'SIGTERM');
      signal(-pid, 'SIGCONT');
      if (await waitGone(pid, times.graceMs)) return;
      signal(-pid, 'SIGKILL');
      await waitGone(pid, times.killWaitMs);
    },
  };
}
