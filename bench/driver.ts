// Drives a program that speaks the host protocol's turn frames (turnhost host, or a floor) over
// real pipes: closed-loop throughput with N sessions, and one-session turn latency.
import { spawn, type ChildProcess } from 'node:child_process';
import { LineReader } from '../protocol/line-reader.js';

export interface Throughput {
  sessions: number;
  turns: number;
  seconds: number;
  turnsPerSec: number;
}

export interface Latency {
  turns: number;
  p50Ms: number;
  p99Ms: number;
  meanMs: number;
}

const TURN_END = '{"type":"turn.end"';
const TURN_ERROR = '{"type":"turn.error"';
const HELLO = '{"type":"hello"';

function sidOf(line: string): string {
  const at = line.indexOf('"sid":"') + 7;
  return line.slice(at, line.indexOf('"', at));
}

/** A child speaking turn frames; only hello, turn.end and turn.error lines are looked at. */
export class TurnProcess {
  private readonly child: ChildProcess;
  private onEnd: (sid: string) => void = () => {};
  private failure: string | undefined;
  private onFailure: (reason: string) => void = () => {};
  readonly hello: Promise<void>;
  stderr = '';

  constructor(command: string, args: readonly string[], env: NodeJS.ProcessEnv = {}) {
    this.child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, TURNHOST_LOG_LEVEL: 'warn', ...env } });
    let helloSeen: () => void = () => {};
    this.hello = new Promise((resolve) => (helloSeen = resolve));
    const reader = new LineReader({
      line: (line) => {
        if (line.startsWith(TURN_END)) this.onEnd(sidOf(line));
        else if (line.startsWith(TURN_ERROR)) this.fail(line);
        else if (line.startsWith(HELLO)) helloSeen();
      },
      oversized: () => this.fail('oversized line'),
    });
    this.child.stdout!.on('data', (chunk: Buffer) => reader.push(chunk));
    this.child.stderr!.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
    this.child.once('exit', (code, signal) => this.fail(`${command} exited (code ${code}, signal ${signal})`));
    this.hello = Promise.race([this.hello, new Promise<never>((_, reject) => (this.onFailure = (why) => reject(new Error(why))))]);
  }

  /** A dead program fails whatever waits on it, instead of leaving the benchmark hanging. */
  private fail(reason: string): void {
    this.failure ??= reason;
    this.onFailure(`${reason}\n${this.stderr.slice(-2000)}`);
  }

  private until<T>(work: (resolve: (value: T) => void) => void): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.failure) return reject(new Error(this.failure));
      this.onFailure = (why) => reject(new Error(why));
      work(resolve);
    });
  }

  private send(sid: string, requestId: number, text: string): void {
    this.child.stdin!.write(`{"type":"turn.start","sid":"${sid}","request_id":"r${requestId}","text":"${text}"}\n`);
  }

  /** Closed loop: each session sends its next turn when its last one ended. */
  async throughput(sessions: number, prefix: string, warmupMs: number, measureMs: number): Promise<Throughput> {
    let requestId = 0;
    let counted = 0;
    let counting = false;
    let sending = true;
    let inFlight = 0;
    let drained: () => void = () => {};
    this.onEnd = (sid) => {
      inFlight--;
      if (counting) counted++;
      if (sending) {
        inFlight++;
        this.send(sid, ++requestId, 'hello');
      } else if (inFlight === 0) drained();
    };
    for (let i = 0; i < sessions; i++) {
      inFlight++;
      this.send(`${prefix}-${i}`, ++requestId, 'hello');
    }
    await sleep(warmupMs);
    counting = true;
    const started = performance.now();
    await sleep(measureMs);
    counting = false;
    const seconds = (performance.now() - started) / 1000;
    sending = false;
    await this.until<void>((resolve) => {
      drained = resolve;
      if (inFlight === 0) resolve();
    });
    return { sessions, turns: counted, seconds, turnsPerSec: counted / seconds };
  }

  /** One session, turns back to back: turn.start written → turn.end read. */
  async latency(sid: string, warmup: number, turns: number): Promise<Latency> {
    const samples: number[] = [];
    for (let i = 0; i < warmup + turns; i++) {
      const ended = this.until<void>((resolve) => (this.onEnd = () => resolve()));
      const t0 = performance.now();
      this.send(sid, i, 'hello');
      await ended;
      if (i >= warmup) samples.push(performance.now() - t0);
    }
    samples.sort((a, b) => a - b);
    const at = (q: number) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]!;
    return { turns, p50Ms: at(0.5), p99Ms: at(0.99), meanMs: samples.reduce((a, b) => a + b, 0) / samples.length };
  }

  async close(): Promise<void> {
    this.onFailure = () => {};
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
