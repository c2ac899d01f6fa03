// Drives a program that speaks the host protocol's turn frames (turnhost host, or a floor) over
// real pipes: closed-loop throughput with N sessions, and one-session turn latency.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { LineReader } from '../protocol/line-reader.js';
import { ROUNDS } from './common.js';

export interface Throughput {
  sessions: number;
  /** Turns that ended while counting (after the warm-up); `ended` counts every turn of the loop. */
  turns: number;
  seconds: number;
  turnsPerSec: number;
  ended: number;
  /** The turns counted, each from its submit to its end read. */
  p50Ms: number;
  p99Ms: number;
}

export interface Latency {
  turns: number;
  p50Ms: number;
  p99Ms: number;
  meanMs: number;
  /** The session's history grows with each turn: the p50 of its first fifth of turns, and of its last. */
  firstFifthP50Ms: number;
  lastFifthP50Ms: number;
}

const TURN_END = '{"type":"turn.end"';
const TURN_ERROR = '{"type":"turn.error"';
const HELLO = '{"type":"hello"';

function sidOf(line: string): string {
  const at = line.indexOf('"sid":"') + 7;
  return line.slice(at, line.indexOf('"', at));
}

/** A program under test, as the loops below drive it. */
export interface TurnTarget {
  /** Sends a one-word turn for the session. */
  submit(sid: string): void;
  /** The one listener for ended turns. */
  onEnd(listener: (sid: string) => void): void;
  /** The promise, or a rejection as soon as the program fails. */
  guarded<T>(promise: Promise<T>): Promise<T>;
}

/** A target whose turns end by callback, and whose first failure rejects the loop that waits on it. */
export abstract class CallbackTarget implements TurnTarget {
  protected endListener: (sid: string) => void = () => {};
  protected failure: Error | null = null;

  abstract submit(sid: string): void;

  onEnd(listener: (sid: string) => void): void {
    this.endListener = listener;
  }

  async guarded<T>(promise: Promise<T>): Promise<T> {
    const value = await promise;
    if (this.failure !== null) throw this.failure;
    return value;
  }
}

/** The daemon's and the edge's path measures: closed-loop throughput at 64 sessions, then one session back to back, in rounds. */
export const PATH_PLAN = { sessions: 64, warmupMs: 500, measureMs: 3000, latencyWarmup: 300, latencyTurns: 3000, rounds: ROUNDS } as const;

export interface PathRun {
  /** Closed-loop turns/s of the processes once warm: the loop's second window. */
  turnsPerSec: number;
  /** The loop's first window (after `warmupMs`), in processes just started. */
  freshTurnsPerSec: number;
  latency: { p50Ms: number; p99Ms: number };
  /** CPU time (user + system) each watched process spent per turn of the warm window, in µs. */
  cpuUsPerTurn: Record<string, number>;
}

/** A process's CPU time so far, user and system, in clock ticks (/proc/<pid>/stat fields 14 and 15). */
export function cpuTicks(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

/** Linux's USER_HZ: /proc counts CPU time in hundredths of a second. */
export const TICKS_PER_SECOND = 100;

/**
 * One path's measure by PATH_PLAN: its sessions are `<prefix>-N`, its latency session `<prefix>-lat`.
 * `watch` names the processes whose CPU per turn of the warm window is reported (the benchmark's own included).
 *
 * The closed loop is measured twice, back to back: processes just started spend their first
 * seconds optimizing their code, and a process in the middle of a path pays for it on every turn
 * it passes on (2026-12-02: the daemon's CPU a turn was 170–196 µs from 0.5 s to 3.5 s after its
 * start, 105–126 µs in each 3 s after; the host alone's fell 5–18%). The second window is the
 * path as it runs once started; the first is kept, and shown.
 */
export async function measurePath(target: TurnTarget, prefix: string, watch: Record<string, number> = {}): Promise<PathRun> {
  const pids = { client: process.pid, ...watch };
  const sids = sessionIds(prefix, PATH_PLAN.sessions);
  const fresh = await closedLoop(target, sids, PATH_PLAN.warmupMs, PATH_PLAN.measureMs);
  const before = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuTicks(pid)]));
  const warm = await closedLoop(target, sids, 0, PATH_PLAN.measureMs);
  const usPerTick = 1e6 / TICKS_PER_SECOND;
  const cpuUsPerTurn = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, ((cpuTicks(pid) - before[name]!) * usPerTick) / warm.ended]));
  const latency = await backToBack(target, `${prefix}-lat`, PATH_PLAN.latencyWarmup, PATH_PLAN.latencyTurns);
  return { turnsPerSec: warm.turnsPerSec, freshTurnsPerSec: fresh.turnsPerSec, latency, cpuUsPerTurn };
}

/** Closed loop: each session sends its next turn when its last one ended. */
export async function closedLoop(target: TurnTarget, sids: readonly string[], warmupMs: number, measureMs: number): Promise<Throughput> {
  let counted = 0;
  let counting = false;
  let sending = true;
  let inFlight = 0;
  let drained: () => void = () => {};
  let ended = 0;
  const sentAt = new Map<string, number>();
  const samples: number[] = [];
  const send = (sid: string): void => {
    inFlight++;
    sentAt.set(sid, performance.now());
    target.submit(sid);
  };
  target.onEnd((sid) => {
    inFlight--;
    ended++;
    if (counting) {
      counted++;
      samples.push(performance.now() - sentAt.get(sid)!);
    }
    if (sending) send(sid);
    else if (inFlight === 0) drained();
  });
  for (const sid of sids) send(sid);
  await sleep(warmupMs);
  counting = true;
  const started = performance.now();
  await sleep(measureMs);
  counting = false;
  const seconds = (performance.now() - started) / 1000;
  sending = false;
  await target.guarded(
    new Promise<void>((resolve) => {
      drained = resolve;
      if (inFlight === 0) resolve();
    }),
  );
  return { sessions: sids.length, turns: counted, seconds, turnsPerSec: counted / seconds, ended, p50Ms: quantile(samples, 0.5), p99Ms: quantile(samples, 0.99) };
}

/** One session, turns back to back: from the turn sent to its end read. */
export async function backToBack(target: TurnTarget, sid: string, warmup: number, turns: number): Promise<Latency> {
  const samples: number[] = [];
  for (let i = 0; i < warmup + turns; i++) {
    const ended = target.guarded(new Promise<void>((resolve) => target.onEnd(() => resolve())));
    const t0 = performance.now();
    target.submit(sid);
    await ended;
    if (i >= warmup) samples.push(performance.now() - t0);
  }
  const fifth = Math.max(1, Math.floor(samples.length / 5));
  const firstFifthP50Ms = quantile(samples.slice(0, fifth), 0.5);
  const lastFifthP50Ms = quantile(samples.slice(-fifth), 0.5);
  return { turns, p50Ms: quantile(samples, 0.5), p99Ms: quantile(samples, 0.99), meanMs: samples.reduce((a, b) => a + b, 0) / samples.length, firstFifthP50Ms, lastFifthP50Ms };
}

export function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

export interface LoadPlan {
  sessionCounts: readonly number[];
  warmupMs: number;
  measureMs: number;
  latencyWarmup: number;
  latencyTurns: number;
}

export interface ProgramResult {
  throughput: Throughput[];
  latency: Latency;
}

/** A started program, measured: closed-loop throughput at each session count, then one session's latency. */
export async function measureProgram(proc: TurnProcess, plan: LoadPlan): Promise<ProgramResult> {
  await proc.hello;
  const throughput: Throughput[] = [];
  for (const sessions of plan.sessionCounts) throughput.push(await closedLoop(proc, sessionIds(`tp${sessions}`, sessions), plan.warmupMs, plan.measureMs));
  const latency = await backToBack(proc, 'lat', plan.latencyWarmup, plan.latencyTurns);
  await proc.close();
  return { throughput, latency };
}

export function sessionIds(prefix: string, count: number): string[] {
  return Array.from({ length: count }, (_, i) => `${prefix}-${i}`);
}

/** A child speaking turn frames; only hello, turn.end and turn.error lines are looked at. */
export class TurnProcess implements TurnTarget {
  private readonly child: ChildProcess;
  private endListener: (sid: string) => void = () => {};
  private requestId = 0;
  private readonly byField: string;
  private fail: (reason: string) => void = () => {};
  /** Rejects once the program fails: a turn.error, or its exit while it was being driven. */
  private readonly failed: Promise<never>;
  readonly hello: Promise<void>;
  stderr = '';

  /** `by`: the person every turn is sent as (PROTOCOL.md §5.6); none: the home's owner. */
  constructor(command: string, args: readonly string[], env: NodeJS.ProcessEnv = {}, by?: string) {
    this.byField = by === undefined ? '' : `,"by":${JSON.stringify(by)}`;
    this.child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, TURNHOST_LOG_LEVEL: 'warn', ...env } });
    this.failed = new Promise<never>((_, reject) => (this.fail = (reason) => reject(new Error(`${reason}\n${this.stderr.slice(-2000)}`))));
    this.failed.catch(() => {}); // observed through guarded(); a failure nobody waits on is not an error
    let helloSeen: () => void = () => {};
    this.hello = this.guarded(new Promise((resolve) => (helloSeen = resolve)));
    const reader = new LineReader({
      line: (line) => {
        if (line.startsWith(TURN_END)) this.endListener(sidOf(line));
        else if (line.startsWith(TURN_ERROR)) this.fail(`turn failed: ${line}`);
        else if (line.startsWith(HELLO)) helloSeen();
      },
      oversized: () => this.fail('oversized line'),
    });
    this.child.stdout!.on('data', (chunk: Buffer) => reader.push(chunk));
    this.child.stderr!.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
    this.child.once('exit', (code, signal) => this.fail(`${command} exited (code ${code}, signal ${signal})`));
  }

  submit(sid: string): void {
    this.child.stdin!.write(`{"type":"turn.start","sid":"${sid}","request_id":"r${++this.requestId}","text":"hello"${this.byField}}\n`);
  }

  onEnd(listener: (sid: string) => void): void {
    this.endListener = listener;
  }

  guarded<T>(promise: Promise<T>): Promise<T> {
    return Promise.race([promise, this.failed]);
  }

  get pid(): number {
    return this.child.pid!;
  }

  async close(): Promise<void> {
    this.fail = () => {};
    if (this.child.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.stdin!.end();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
