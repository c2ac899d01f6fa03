// The terminals turnhost runs for a guest (PROTOCOL.md §2.4, ACP's `terminal/*` methods): turnhost
// is the guest's client and offers `terminal: true`; each command runs in the session's sandbox
// (its walls, its folder, its proxy, a tree bounded as the guest's is), its output (stdout and
// stderr as one stream, as a terminal shows them) kept up to `outputByteLimit`, the oldest dropped
// first. Every terminal ends with its live session.
import { spawn, type ChildProcess } from 'node:child_process';
import { isAbsolute, relative, resolve } from 'node:path';
import {
  RequestError,
  type CreateTerminalRequest,
  type CreateTerminalResponse,
  type TerminalExitStatus,
  type TerminalOutputResponse,
} from '@agentclientprotocol/sdk';
import { endTree } from '../../persistence/proc.js';
import { TERMINAL_OUTPUT_MAX, type TerminalPart } from '../../protocol/content.js';
import type { AgentSandbox } from '../sandbox/sandbox.js';

/** ACP leaves the default to the client: 1 MiB, as PROTOCOL.md §2.4 says. */
const DEFAULT_OUTPUT_LIMIT = 1024 * 1024;
/** A guest may ask for more, up to this: one terminal must not hold the host's memory. */
const MAX_OUTPUT_LIMIT = 16 * 1024 * 1024;
/** Terminals of one session not yet released: a guest that never releases is refused, not obeyed for ever. */
const MAX_OPEN_TERMINALS = 16;
/** After SIGTERM, how long a terminal's command has to exit before SIGKILL. */
const KILL_GRACE_MS = 2000;
/** Released terminals whose last state a tool call may still show: the newest kept. */
const RELEASED_KEPT = 32;
/** The name `$0` takes in the shell that starts a command in its cwd. */
const SHELL_NAME = 'turnhost-terminal';

/** One command's process and what it wrote. */
class Terminal {
  private readonly chunks: Buffer[] = [];
  private bytes = 0;
  /** Some output was dropped to stay within the limit. */
  truncated = false;
  exit: TerminalExitStatus | null = null;
  readonly exited: Promise<TerminalExitStatus>;
  private unwatch: () => void = () => {};

  constructor(
    readonly command: string,
    private readonly child: ChildProcess,
    private readonly limit: number,
    sandbox: AgentSandbox,
    onOutput: () => void,
  ) {
    const take = (chunk: Buffer): void => {
      this.append(chunk);
      onOutput();
    };
    child.stdout?.on('data', take);
    child.stderr?.on('data', take);
    this.exited = new Promise((resolve) => {
      child.once('error', (err) => {
        this.append(Buffer.from(`${err.message}\n`));
        this.exit ??= { exitCode: null, signal: null };
        resolve(this.exit);
      });
      child.once('close', (code, signal) => {
        this.exit ??= { exitCode: code, signal };
        resolve(this.exit);
      });
    });
    void this.exited.then(() => {
      this.unwatch();
      onOutput();
    });
    if (child.pid !== undefined) this.unwatch = sandbox.watch(child.pid, (why) => this.over(why));
  }

  /** Its output as a string: the newest `limit` bytes, cut at a character's start. */
  output(): string {
    const kept = Buffer.concat(this.chunks, this.bytes);
    let start = 0;
    // A UTF-8 continuation byte (10xxxxxx) is the middle of a character the cut split.
    while (this.truncated && start < kept.length && start < 4 && (kept[start]! & 0xc0) === 0x80) start++;
    return kept.subarray(start).toString('utf8');
  }

  response(): TerminalOutputResponse {
    return { output: this.output(), truncated: this.truncated, ...(this.exit === null ? {} : { exitStatus: this.exit }) };
  }

  async kill(): Promise<void> {
    if (this.exit !== null) return;
    await endTree(this.child, KILL_GRACE_MS);
  }

  private append(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.bytes += chunk.length;
    while (this.bytes > this.limit) {
      this.truncated = true;
      const first = this.chunks[0]!;
      const over = this.bytes - this.limit;
      if (first.length <= over) {
        this.chunks.shift();
        this.bytes -= first.length;
      } else {
        this.chunks[0] = first.subarray(over);
        this.bytes -= over;
      }
    }
  }

  private over(why: string): void {
    this.append(Buffer.from(`\n[turnhost ended this command with all it ran: ${why}]\n`));
    void this.kill();
  }
}

type Shown = Omit<TerminalPart, 'type' | 'terminalId'>;

export class GuestTerminals {
  private readonly terminals = new Map<string, Terminal>();
  /**
   * What released terminals last showed: a guest releases one as soon as its command exits, often
   * before the tool call that shows it completes (Claude Code's adapter does).
   */
  private readonly released = new Map<string, Shown>();
  private counter = 0;
  private closed = false;

  constructor(
    private readonly sandbox: AgentSandbox,
    /** The guest's environment (AGENT.md §6's allowlist): a terminal has it, with what the guest adds. */
    private readonly env: Readonly<Record<string, string>>,
    /** Told whenever a terminal wrote or ended: a tool call that shows it is brought up to date. */
    private readonly changed: (terminalId: string) => void,
  ) {}

  create(request: CreateTerminalRequest): CreateTerminalResponse {
    if (this.closed) throw RequestError.invalidRequest(undefined, 'the session is ending');
    if (this.terminals.size >= MAX_OPEN_TERMINALS) throw RequestError.invalidRequest(undefined, `at most ${MAX_OPEN_TERMINALS} terminals may be held at once: release one first`);
    const cwd = this.cwdOf(request.cwd);
    const limit = outputLimit(request.outputByteLimit);
    const env = { ...this.env, ...Object.fromEntries((request.env ?? []).map((v) => [v.name, v.value])) };
    const confined = this.sandbox.wrap('/bin/sh', shellArgs(request.command, request.args ?? [], cwd), env);
    const child = spawn(confined.command, confined.args, { cwd: this.sandbox.folder, env: confined.env, stdio: ['ignore', 'pipe', 'pipe', ...confined.fds] });
    const terminalId = `term-${++this.counter}`;
    const shown = [request.command, ...(request.args ?? [])].join(' ');
    this.terminals.set(terminalId, new Terminal(shown, child, limit, this.sandbox, () => this.changed(terminalId)));
    return { terminalId };
  }

  output(terminalId: string): TerminalOutputResponse {
    return this.get(terminalId).response();
  }

  async waitForExit(terminalId: string, signal: AbortSignal): Promise<TerminalExitStatus> {
    const terminal = this.get(terminalId);
    if (signal.aborted) throw RequestError.requestCancelled();
    let onAbort!: () => void;
    const cancelled = new Promise<never>((_, reject) => {
      onAbort = () => reject(RequestError.requestCancelled());
      signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      return await Promise.race([terminal.exited, cancelled]);
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }

  async kill(terminalId: string): Promise<Record<string, never>> {
    await this.get(terminalId).kill();
    return {};
  }

  /** Killed if it runs, and forgotten: its id answers no more (what a tool call kept of it stays there). */
  async release(terminalId: string): Promise<Record<string, never>> {
    const terminal = this.get(terminalId);
    this.terminals.delete(terminalId);
    await terminal.kill();
    this.released.set(terminalId, shown(terminal));
    if (this.released.size > RELEASED_KEPT) this.released.delete(this.released.keys().next().value!);
    return {};
  }

  /** What a tool call shows of one of these terminals; null for an id that is not one (a guest's own). */
  part(terminalId: string): Shown | null {
    const terminal = this.terminals.get(terminalId);
    return terminal === undefined ? (this.released.get(terminalId) ?? null) : shown(terminal);
  }

  /** Every terminal ends with its session: none outlives the guest that asked for it. */
  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.terminals.values()];
    this.terminals.clear();
    await Promise.all(all.map((terminal) => terminal.kill()));
  }

  private get(terminalId: string): Terminal {
    const terminal = this.terminals.get(terminalId);
    if (terminal === undefined) throw RequestError.invalidParams(undefined, `no terminal ${terminalId} (never made, or released)`);
    return terminal;
  }

  /** The command's folder: the session's, or one inside it (it is all the sandbox shows). */
  private cwdOf(cwd: string | null | undefined): string {
    const folder = this.sandbox.folder;
    if (cwd === undefined || cwd === null) return folder;
    const inside = relative(folder, resolve(folder, cwd));
    if (!isAbsolute(cwd) || inside.startsWith('..') || isAbsolute(inside)) throw RequestError.invalidParams(undefined, `cwd ${cwd} is not an absolute path inside the session's folder ${folder}`);
    return resolve(folder, cwd);
  }
}

/** A terminal as a tool call shows it: its command, its output's newest part, its exit code once it exited. */
function shown(terminal: Terminal): Shown {
  return { command: terminal.command, output: terminal.output().slice(-TERMINAL_OUTPUT_MAX), ...(terminal.exit === null ? {} : { exitCode: terminal.exit.exitCode ?? null }) };
}

function outputLimit(asked: number | null | undefined): number {
  if (asked === undefined || asked === null) return DEFAULT_OUTPUT_LIMIT;
  if (!Number.isSafeInteger(asked) || asked < 0) throw RequestError.invalidParams(undefined, 'outputByteLimit must be a whole number of bytes');
  return Math.min(asked, MAX_OUTPUT_LIMIT);
}

/**
 * The shell's arguments that run the command in `cwd`: with `args`, the command itself with them
 * (no shell word splitting); without, `command` is a shell line, as editors run it.
 */
function shellArgs(command: string, args: readonly string[], cwd: string): string[] {
  if (args.length === 0) return ['-c', 'cd -- "$1" || exit 126; eval "$2"', SHELL_NAME, cwd, command];
  return ['-c', 'cd -- "$1" || exit 126; shift; exec "$@"', SHELL_NAME, cwd, command, ...args];
}
