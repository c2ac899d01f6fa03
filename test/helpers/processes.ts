// Real turnhost processes for integration tests: spawned in their own process group, frames
// read over real pipes, every process reaped and every temp home removed by cleanup().
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { waitGone } from '../../persistence/proc.js';
import { LineReader } from '../../protocol/line-reader.js';
import { storeEnv } from './test-store.js';
import { Waiters } from './waiters.js';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const CLI = join(REPO_ROOT, 'dist', 'bin', 'turnhost.js');

export type Frame = Record<string, unknown> & { type: string };

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface NextOptions {
  where?: (frame: Frame) => boolean;
  timeoutMs?: number;
}

const DEFAULT_WAIT_MS = 10_000;
const SEEN_LAST = 30;

/**
 * The types of the frames seen, for a failure: the count of each, then the last ones in order. All
 * of them in order ran to thousands of words for a test of many turns, and CI's excerpt of the run
 * then held no test name.
 */
export function seenFrames(frames: readonly Frame[]): string {
  const counts = new Map<string, number>();
  for (const f of frames) counts.set(f.type, (counts.get(f.type) ?? 0) + 1);
  const byType = [...counts].map(([t, n]) => `${n} ${t}`).join(', ');
  const last = frames.slice(-SEEN_LAST).map((f) => f.type).join(', ');
  return `${frames.length} frames (${byType}); the last ${Math.min(SEEN_LAST, frames.length)}: ${last}`;
}

/** A child speaking the host protocol on its stdio. */
export class HostProcess {
  readonly frames: Frame[] = [];
  stderr = '';
  readonly exited: Promise<Exit>;
  private readonly taken = new Set<Frame>();
  private readonly frameWaiters = new Waiters<Frame>();
  private readonly stderrWaiters = new Waiters<string>();

  constructor(readonly child: ChildProcess) {
    const reader = new LineReader({
      line: (text) => this.onFrame(JSON.parse(text) as Frame),
      oversized: () => {
        throw new Error('host wrote an oversized line');
      },
    });
    child.stdout!.on('data', (chunk: Buffer) => reader.push(chunk));
    child.stderr!.on('data', (chunk: Buffer) => {
      this.stderr += chunk.toString('utf8');
      this.stderrWaiters.offer(this.stderr, 'all');
    });
    child.stdin!.on('error', () => {}); // writes after the child died are the test's business
    // 'close', not 'exit': by then every byte the process wrote has been read.
    this.exited = new Promise((done) => child.once('close', (code, signal) => done({ code, signal })));
  }

  get pid(): number {
    return this.child.pid!;
  }

  send(frame: object): void {
    this.sendRaw(`${JSON.stringify(frame)}\n`);
  }

  sendRaw(text: string | Buffer): void {
    this.child.stdin!.write(text);
  }

  closeStdin(): void {
    this.child.stdin!.end();
  }

  /** The first frame of this type (and predicate) not returned before; waits for it if needed. */
  next(type: string, options: NextOptions = {}): Promise<Frame> {
    return this.nextOf([type], options);
  }

  /** The first frame of any of these types (and predicate) not returned before. */
  nextOf(types: readonly string[], options: NextOptions = {}): Promise<Frame> {
    const type = types.join(' | ');
    const match = (f: Frame) => types.includes(f.type) && (options.where?.(f) ?? true) && !this.taken.has(f);
    const found = this.frames.find(match);
    if (found) {
      this.taken.add(found);
      return Promise.resolve(found);
    }
    const timeoutMs = options.timeoutMs ?? DEFAULT_WAIT_MS;
    return this.frameWaiters.wait(match, timeoutMs, () => {
      return `no ${type} frame within ${timeoutMs} ms; saw ${seenFrames(this.frames)}\nstderr: ${this.stderr.slice(-2000)}`;
    });
  }

  /** A turn.start, and the frame that ends it (turn.end or turn.error). */
  turn(sid: string, request_id: string, text: string, extra: object = {}): Promise<Frame> {
    this.send({ type: 'turn.start', sid, request_id, text, ...extra });
    return this.ended(request_id);
  }

  /** The frame that ends the turn a request started: turn.end or turn.error. */
  ended(request_id: string, timeoutMs?: number): Promise<Frame> {
    return this.nextOf(['turn.end', 'turn.error'], { where: (f) => f['request_id'] === request_id, timeoutMs });
  }

  /** Resolves once the process's stderr (its log) matches the pattern. */
  async logged(pattern: RegExp, timeoutMs = DEFAULT_WAIT_MS): Promise<void> {
    if (pattern.test(this.stderr)) return;
    await this.stderrWaiters.wait((text) => pattern.test(text), timeoutMs, () => `stderr did not match ${pattern} within ${timeoutMs} ms:\n${this.stderr.slice(-2000)}`);
  }

  /** Every frame of this type seen so far (taken or not). */
  all(type: string, where?: (frame: Frame) => boolean): Frame[] {
    return this.frames.filter((f) => f.type === type && (where?.(f) ?? true));
  }

  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    try {
      process.kill(this.pid, signal);
    } catch {
      // already gone
    }
  }

  async waitExit(timeoutMs = DEFAULT_WAIT_MS): Promise<Exit> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`process ${this.pid} did not exit within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      return await Promise.race([this.exited, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  private onFrame(frame: Frame): void {
    this.frames.push(frame);
    if (this.frameWaiters.offer(frame, 'one')) this.taken.add(frame);
  }
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Owns what a test starts: every process is killed (its whole group) and every temp folder removed. */
export class Harness {
  private readonly homes: string[] = [];
  private readonly children: ChildProcess[] = [];

  /** A new folder under `parent` (the system's temp folder), removed by cleanup. */
  tempDir(prefix = 'turnhost-test-', parent = tmpdir()): string {
    const dir = mkdtempSync(join(parent, prefix));
    this.homes.push(dir);
    return dir;
  }

  spawnCli(args: readonly string[], env: NodeJS.ProcessEnv = {}, cwd = REPO_ROOT): ChildProcess {
    return this.spawnRaw(process.execPath, [CLI, ...args], env, cwd);
  }

  /**
   * Any command, in its own process group, reaped (group and all) by cleanup(). One that names a
   * `--home` runs on that home's store (test-store.ts: SQLite, or its own PostgreSQL database).
   */
  spawnRaw(command: string, args: readonly string[], env: NodeJS.ProcessEnv = {}, cwd = REPO_ROOT): ChildProcess {
    const home = args.includes('--home') ? args[args.indexOf('--home') + 1] : undefined;
    const child = spawn(command, args, {
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
      cwd,
      env: { ...process.env, TURNHOST_LOG_LEVEL: 'warn', ...storeEnv(home), ...env },
    });
    this.children.push(child);
    return child;
  }

  /** Starts `turnhost host --home HOME …` and waits for its hello. */
  async startHost(home: string, args: readonly string[] = [], env: NodeJS.ProcessEnv = {}): Promise<HostProcess> {
    const host = new HostProcess(this.spawnCli(['host', '--home', home, ...args], env));
    await host.next('hello');
    return host;
  }

  runCli(args: readonly string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 15_000, cwd = REPO_ROOT): Promise<CliResult> {
    return outcome(this.spawnCli(args, env, cwd), '', `turnhost ${args.join(' ')}`, timeoutMs);
  }

  /** A Node script of the repository (an example) run to its end, with `input` as all of its stdin. */
  runScript(script: string, args: readonly string[], env: NodeJS.ProcessEnv, input: string, timeoutMs = 15_000): Promise<CliResult> {
    return outcome(this.spawnRaw(process.execPath, [script, ...args], env), input, script, timeoutMs);
  }

  async cleanup(): Promise<void> {
    const children = this.children.splice(0);
    await Promise.all(children.map(killGroupAndReap));
    const dirs = this.homes.splice(0);
    await killStrays(dirs);
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Processes a test started without holding them (a daemon from `turnhost start`, the host a
 * daemon spawned in its own group): every one names its temp home on its command line.
 */
async function killStrays(dirs: readonly string[]): Promise<void> {
  if (dirs.length === 0) return;
  const strays = processesNaming(dirs);
  for (const pid of strays) {
    // Its group too: a host leads one, with the guest agents it started in it.
    for (const target of [-pid, pid]) {
      try {
        process.kill(target, 'SIGKILL');
      } catch {
        // not a group leader, or gone already
      }
    }
  }
  await Promise.all(strays.map((pid) => waitGone(pid, 5_000)));
}

/** The processes (but this one) whose /proc/<pid>/<file> matches, counted from /proc. */
export function processesWhere(file: 'cmdline' | 'environ', match: (content: string) => boolean): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      if (match(readFileSync(`/proc/${pid}/${file}`, 'utf8'))) found.push(pid);
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}

/** The live processes (a zombie's command line is empty) whose command line names one of `texts`. */
export function processesNaming(texts: readonly string[]): number[] {
  return processesWhere('cmdline', (cmdline) => texts.some((text) => cmdline.includes(text)));
}

/** Kills the child's whole group (a daemon's host and an agent's own children too), then reaps the child. */
async function killGroupAndReap(child: ChildProcess): Promise<void> {
  const running = child.exitCode === null && child.signalCode === null;
  const exited = running ? new Promise<void>((done) => child.once('exit', () => done())) : Promise.resolve();
  try {
    process.kill(-child.pid!, 'SIGKILL');
  } catch {
    if (running) child.kill('SIGKILL');
  }
  await exited;
}

/** What a process wrote, and its exit code, once it has closed; `input` is all of its stdin. */
async function outcome(child: ChildProcess, input: string, what: string, timeoutMs: number): Promise<CliResult> {
  child.stdin!.end(input);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  let timer: NodeJS.Timeout | undefined;
  const code = await Promise.race([
    new Promise<number | null>((done) => child.once('close', (c) => done(c))),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not finish within ${timeoutMs} ms`)), timeoutMs);
    }),
  ]).finally(() => clearTimeout(timer));
  return { code, stdout, stderr };
}

/** Resolves true once the process is stopped (state T in /proc), false after timeoutMs: a SIGSTOP has no event to await. */
export async function stoppedWithin(pid: number, timeoutMs: number): Promise<boolean> {
  const stopped = (): boolean => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      return stat.slice(stat.lastIndexOf(')') + 2).startsWith('T');
    } catch {
      return false;
    }
  };
  const deadline = performance.now() + timeoutMs;
  while (!stopped() && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  return stopped();
}
