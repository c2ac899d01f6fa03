// The compute host as a child process of the supervisor: spawned in its own process group with
// an allowlisted environment, frames read line by line from its stdout, its stderr lines kept
// for the log, and signals sent to the whole group (an agent's own children included).
import { spawn, type ChildProcess } from 'node:child_process';
import type { Writable } from 'node:stream';
import { LineReader } from '../../protocol/line-reader.js';
import { tickWrites } from '../../protocol/tick-writes.js';
import { readStartTime } from '../../persistence/proc.js';

/** What the host may see of the supervisor's environment: no tokens, no keys, unless named. */
const PASSED_NAMES = ['HOME', 'LOGNAME', 'PATH', 'SHELL', 'TERM', 'USER', 'LANG', 'TZ', 'TMPDIR', 'HERMES_TUI_RPC_POOL_WORKERS', 'HERMES_COMPUTE_HOST_HEARTBEAT_SECS'];
// OTEL_: the host makes the spans and exports them (PROTOCOL.md §5.8); an agent's processes see none of it.
const PASSED_PREFIXES = ['LC_', 'TURNHOST_', 'OTEL_'];
/** A space-separated list of extra variables an agent needs (an API key, say). */
const EXTRA_NAMES = 'TURNHOST_AGENT_ENV';

/** How long a dead host's remaining output is waited for before its exit is reported. */
const LAST_WORDS_WAIT_MS = 1000;

export function hostEnvironment(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const extra = (env[EXTRA_NAMES] ?? '').split(/\s+/).filter((n) => n !== '');
  const passed: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (PASSED_NAMES.includes(name) || extra.includes(name) || PASSED_PREFIXES.some((p) => name.startsWith(p))) passed[name] = value;
  }
  return passed;
}

/** The values `env` has of `names`: what the host's agents need, handed to it beside its environment (catalogue-handoff.ts). */
export function variableValues(env: NodeJS.ProcessEnv, names: Iterable<string>): Record<string, string> {
  const values: Record<string, string> = {};
  for (const name of names) {
    const value = env[name];
    if (value !== undefined) values[name] = value;
  }
  return values;
}

/** What the supervisor needs of a host process (HostChild; a test may give a stand-in). */
export interface HostHandle {
  readonly argv: string[];
  readonly pid: number;
  readonly startTime: number | null;
  readonly stderrTail: string[];
  readonly alive: boolean;
  send(frame: object): void;
  /** Stops (and restarts) reading the host's frames: the daemon's backpressure. */
  pauseOutput(): void;
  resumeOutput(): void;
  signalGroup(signal: NodeJS.Signals): void;
}

export interface HostChildEvents {
  /** The lines of one read from the host's stdout, in order (one batch per read, not per line). */
  lines(child: HostHandle, texts: string[]): void;
  stderr(child: HostHandle, text: string): void;
  /** A log record from the host's own log descriptor (fd 3), which nothing but the host writes. */
  log(child: HostHandle, text: string): void;
  /** Whether more frames for the host are coming at once: its stdin batch waits for them (bounded, tick-writes.ts). */
  moreToSend(): boolean;
  exit(child: HostHandle, code: number | null, signal: NodeJS.Signals | null): void;
}

const STDERR_TAIL_LINES = 80;
/** The host's log records come on their own pipe (`turnhost host --log-fd 3`): its stderr also carries what its libraries print. */
export const HOST_LOG_FD = 3;
/** The validated catalogue comes to the host on a pipe of its own (`turnhost host --catalogue-fd 4`, catalogue-handoff.ts). */
export const HOST_CATALOGUE_FD = 4;

export class HostChild implements HostHandle {
  readonly argv: string[];
  readonly pid: number;
  readonly startTime: number | null;
  readonly stderrTail: string[] = [];
  private exited = false;
  private readonly writeStdin: (text: string) => void;

  private constructor(private readonly child: ChildProcess, argv: string[], events: HostChildEvents) {
    this.argv = argv;
    this.writeStdin = child.stdin ? tickWrites(child.stdin, events.moreToSend) : () => {};
    this.pid = child.pid ?? -1;
    this.startTime = this.pid > 0 ? readStartTime(this.pid) : null;
    let batch: string[] = [];
    const frames = new LineReader({ line: (text) => batch.push(text), oversized: () => events.stderr(this, 'host wrote a frame over 8 MiB') });
    const stderr = new LineReader({
      line: (text) => {
        this.stderrTail.push(text);
        if (this.stderrTail.length > STDERR_TAIL_LINES) this.stderrTail.shift();
        events.stderr(this, text);
      },
      oversized: () => {},
    });
    child.stdout?.on('data', (chunk: Buffer) => {
      frames.push(chunk);
      if (batch.length === 0) return;
      const texts = batch;
      batch = [];
      events.lines(this, texts);
    });
    child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk));
    const logs = new LineReader({ line: (text) => events.log(this, text), oversized: () => {} });
    child.stdio[HOST_LOG_FD]?.on('data', (chunk: Buffer) => logs.push(chunk));
    child.stdin?.on('error', () => {}); // EPIPE after the host died: its exit is reported below
    let reported = false;
    const report = (code: number | null, signal: NodeJS.Signals | null): void => {
      if (reported) return;
      reported = true;
      this.exited = true;
      events.exit(this, code, signal);
    };
    // A process's exit can be seen before the last of its output is read: the exit is reported
    // once stdout has ended too (its last frames, a turn.started say, are handled first), or
    // after LAST_WORDS_WAIT_MS when something else holds the pipe open.
    let stdoutEnded = child.stdout === null;
    child.stdout?.once('end', () => (stdoutEnded = true));
    child.once('exit', (code, signal) => {
      if (stdoutEnded) return report(code, signal);
      const timer = setTimeout(() => report(code, signal), LAST_WORDS_WAIT_MS);
      child.stdout!.once('end', () => {
        clearTimeout(timer);
        // After the 'data' handlers of the last chunk: they ran before 'end' was emitted.
        report(code, signal);
      });
    });
    child.once('error', () => report(null, null)); // the spawn itself failed
  }

  /**
   * `handoff`: what the host reads on its catalogue descriptor (catalogue-handoff.ts), written once
   * it settles; a handoff that fails closes the descriptor empty, and the host ends.
   */
  static spawn(entry: string, args: readonly string[], env: NodeJS.ProcessEnv, events: HostChildEvents, handoff: Promise<string>): HostChild {
    const argv = [process.execPath, entry, ...args];
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['pipe', 'pipe', 'pipe', 'pipe', 'pipe'], detached: true, env });
    const catalogue = child.stdio[HOST_CATALOGUE_FD] as Writable | null;
    catalogue?.on('error', () => {}); // EPIPE after the host died: its exit is reported as any other
    handoff.then(
      (text) => catalogue?.end(text),
      () => catalogue?.end(),
    );
    return new HostChild(child, argv, events);
  }

  get alive(): boolean {
    return !this.exited;
  }

  /** One frame, one line; the lines of one loop turn leave in one write. */
  send(frame: object): void {
    if (this.exited || !this.child.stdin?.writable) return;
    this.writeStdin(`${JSON.stringify(frame)}\n`);
  }

  pauseOutput(): void {
    this.child.stdout?.pause();
  }

  resumeOutput(): void {
    this.child.stdout?.resume();
  }

  signalGroup(signal: NodeJS.Signals): void {
    if (this.pid <= 0) return;
    try {
      process.kill(-this.pid, signal);
    } catch {
      // the group is gone already
    }
  }

}
