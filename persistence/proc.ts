// The real process probe: /proc on Linux, signals for liveness.
import type { ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
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

/** A process as /proc names it: its pid and its start time, so a reused pid is never taken for it. */
export interface ProcessIdentity {
  pid: number;
  startTime: number;
}

/** One process as /proc/<pid>/stat has it. */
export interface ProcessRow extends ProcessIdentity {
  parent: number;
  group: number;
  zombie: boolean;
  /** Resident pages. */
  rssPages: number;
}

/** Every process now, from /proc, read once for whoever needs several of them. */
export function processTable(): Map<number, ProcessRow> {
  const table = new Map<number, ProcessRow>();
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      // After the command (which may hold spaces): state, ppid, pgrp, …; field n of the line is n - 3 here.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      table.set(pid, { pid, parent: Number(fields[1]), group: Number(fields[2]), zombie: fields[0] === 'Z', startTime: Number(fields[22 - 3]), rssPages: Number(fields[24 - 3]) });
    } catch {
      // gone while the table was read
    }
  }
  return table;
}

/** The children of each process in a table. */
export function childrenOf(table: ReadonlyMap<number, ProcessRow>): Map<number, number[]> {
  const children = new Map<number, number[]>();
  for (const row of table.values()) children.set(row.parent, [...(children.get(row.parent) ?? []), row.pid]);
  return children;
}

/** The process's descendants now, from /proc's parent links (children before grandchildren). */
export function descendants(root: number): ProcessIdentity[] {
  const table = processTable();
  const children = childrenOf(table);
  const found: ProcessIdentity[] = [];
  for (let queue = [...(children.get(root) ?? [])]; queue.length > 0; ) {
    const pid = queue.shift()!;
    found.push({ pid, startTime: table.get(pid)!.startTime });
    queue = [...queue, ...(children.get(pid) ?? [])];
  }
  return found;
}

/** The live processes of a process group, with their start times. */
export function groupMembers(pgid: number): ProcessIdentity[] {
  return [...processTable().values()].filter((row) => row.group === pgid && !row.zombie);
}

/** Signals the process only while it is still the one that was found. */
function signalIdentity(process_: ProcessIdentity, name: NodeJS.Signals): void {
  if (readStartTime(process_.pid) === process_.startTime) signal(process_.pid, name);
}

/**
 * Ends a child and what it started (a guest agent's own children): SIGTERM to all of them, SIGKILL
 * to what remains after `graceMs`; resolves once all are gone. Its children are found before it
 * dies: an orphan's parent link no longer leads to it.
 */
export async function endTree(child: ChildProcess, graceMs: number): Promise<void> {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const tree = descendants(child.pid);
  const deadline = Date.now() + graceMs;
  child.kill('SIGTERM');
  for (const member of tree) signalIdentity(member, 'SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
  await Promise.all(tree.map((member) => waitGone(member.pid, Math.max(0, deadline - Date.now()))));
  for (const member of tree) signalIdentity(member, 'SIGKILL');
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
    endOrphans(pgid, startedSince) {
      const orphans = groupMembers(pgid).filter((member) => member.startTime >= startedSince);
      for (const orphan of orphans) signalIdentity(orphan, 'SIGKILL');
      return orphans.length;
    },
    async terminate(pid) {
      signal(-pid, 'SIGTERM');
      signal(-pid, 'SIGCONT');
      if (await waitGone(pid, times.graceMs)) return;
      signal(-pid, 'SIGKILL');
      await waitGone(pid, times.killWaitMs);
    },
  };
}
