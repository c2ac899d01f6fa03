// One guest agent process (AGENT.md §6): spawned in its session's sandbox (§7) with only the
// environment its config gives it, spoken to in ACP over its stdin/stdout, its stderr logged
// quoted, and ended on demand, or when its tree passes the sandbox's bounds. It dies with its host
// (kill -9 included, the daemon's too): the sandbox's walls, or without them a parent-death signal.
import { spawn, type ChildProcess } from 'node:child_process';
import { type AnyMessage, type ClientApp, type ClientConnection, type Stream } from '@agentclientprotocol/sdk';
import { endTree } from '../../persistence/proc.js';
import { LineReader } from '../../protocol/line-reader.js';
import type { GuestConfig } from './guest-config.js';
import type { AgentSandbox } from '../sandbox/sandbox.js';

/** The longest line a guest may send: a transcript replayed by a load is many lines, none this long. */
const MAX_GUEST_LINE_BYTES = 8 * 1024 * 1024;
/** Lines of its stderr kept to explain an exit. */
const STDERR_TAIL = 5;
/** A logged stderr or garbage line is cut here: a runaway guest must not fill the log. */
const LOGGED_LINE_MAX = 2000;
/** After SIGTERM, how long a guest has to exit before SIGKILL. */
export const END_GRACE_MS = 2000;
/** A guest whose connection closed has this long to be seen exiting, so its exit code and stderr explain the failure. */
export const EXIT_WAIT_MS = 2000;
/** After a guest exits, how long its stderr's last lines may take to be read. */
const STDERR_DRAIN_MS = 200;
/** What the sandbox's shell (or setpriv) exits with when the guest's command cannot be run. */
const NOT_FOUND = 127;

export interface GuestLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

export interface GuestExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The spawn itself failed (no such command, say). */
  error?: string;
}

export class GuestProcess {
  readonly connection: ClientConnection;
  /** Resolves when the process has exited (or could not be started). */
  readonly exited: Promise<GuestExit>;
  /** Aborted when the process has exited: what a wait on the guest races against (`untilAborted`). */
  readonly gone: AbortSignal;
  private readonly goneController = new AbortController();
  private readonly stderrTail: string[] = [];
  private exit: GuestExit | null = null;
  /** Why the host ended it (its tree passed the sandbox's bounds); null otherwise. */
  endedFor: string | null = null;

  constructor(
    private readonly config: GuestConfig,
    private readonly child: ChildProcess,
    app: ClientApp,
    private readonly log: GuestLog,
    private readonly sid: string,
  ) {
    this.exited = new Promise((resolve) => {
      child.once('error', (err) => {
        this.exit ??= { code: null, signal: null, error: err.message };
        resolve(this.exit);
      });
      child.once('exit', (code, signal) => {
        // Its last words may still be in the pipe: its stderr's end is awaited a moment (a
        // process it started may hold the pipe open, so not for ever).
        const settle = (): void => {
          this.exit ??= { code, signal };
          resolve(this.exit);
        };
        if (child.stderr === null || child.stderr.readableEnded) return settle();
        const timer = setTimeout(settle, STDERR_DRAIN_MS);
        child.stderr.once('end', () => {
          clearTimeout(timer);
          settle();
        });
      });
    });
    this.gone = this.goneController.signal;
    void this.exited.then(() => this.goneController.abort());
    this.readStderr();
    this.connection = app.connect(this.messageStream());
    // A guest that exits closes its side: requests waiting on it fail at once, not at their timeouts.
    void this.exited.then(() => this.connection.close(new Error(this.describeExit())));
  }

  static start(config: GuestConfig, cwd: string, app: ClientApp, log: GuestLog, sid: string, sandbox: AgentSandbox): GuestProcess {
    const confined = sandbox.wrap(config.command, config.args, config.env);
    const child = spawn(confined.command, confined.args, { cwd, env: confined.env, stdio: ['pipe', 'pipe', 'pipe', ...confined.fds] });
    const guest = new GuestProcess(config, child, app, log, sid);
    if (child.pid !== undefined) sandbox.watch(child.pid, (why) => void guest.endFor(why));
    return guest;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get alive(): boolean {
    return this.exit === null;
  }

  /** Why the guest is gone: its exit code or signal and the last lines of its stderr, naming the command. */
  describeExit(): string {
    const exit = this.exit;
    const how =
      this.endedFor !== null
        ? `was ended with all it ran: ${this.endedFor}`
        : exit === null
          ? 'is running'
          : exit.error !== undefined
            ? `could not be started: ${exit.error}`
            : exit.signal !== null
              ? `was ended by ${exit.signal}`
              : exit.code === NOT_FOUND
                ? 'could not be started (no such command, or not one that runs: exit 127)'
                : `exited with code ${exit.code}`;
    const tail = this.stderrTail.length === 0 ? '' : `; its stderr ends: ${this.stderrTail.join(' | ')}`;
    return `the guest agent ${JSON.stringify(this.config.command)} ${how}${tail}`;
  }

  /** True once the guest has exited, waiting up to `ms` for it. */
  async exitedWithin(ms: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), ms)));
    const exit = await Promise.race([this.exited, late]);
    clearTimeout(timer);
    return exit !== null;
  }

  /** Its tree passed the sandbox's bounds: it is ended, and its turn fails saying why (reason `resources`). */
  async endFor(why: string): Promise<void> {
    this.endedFor = why;
    this.log.warn({ name: 'sandbox-bound', sid: this.sid, why }, 'the guest agent was ended: its sandbox passed a bound');
    await this.end();
  }

  /** Ends the guest and what it started (Claude Code's CLI is a child of its adapter); resolves once all are gone. */
  async end(): Promise<void> {
    if (this.exit !== null) return;
    this.connection.close();
    await endTree(this.child, END_GRACE_MS);
  }

  /** stderr is the guest's to write: logged quoted, line by line, never read as a record. */
  private readStderr(): void {
    const reader = new LineReader({
      line: (text) => {
        const line = text.slice(0, LOGGED_LINE_MAX);
        this.stderrTail.push(line.slice(0, 300));
        if (this.stderrTail.length > STDERR_TAIL) this.stderrTail.shift();
        this.log.info({ name: 'acp-stderr', sid: this.sid, line }, 'guest agent stderr');
      },
      oversized: () => this.log.warn({ name: 'acp-stderr', sid: this.sid }, 'a guest stderr line over the bound was skipped'),
    }, MAX_GUEST_LINE_BYTES);
    this.child.stderr?.on('data', (chunk: Buffer) => reader.push(chunk));
  }

  /**
   * The guest's stdout as JSON-RPC messages, each line parsed once: a line that is not a JSON-RPC
   * object is logged and skipped, never answered (a guest that prints to stdout by mistake must
   * not be sent errors it did not ask for).
   */
  private messageStream(): Stream {
    const child = this.child;
    const log = this.log;
    const sid = this.sid;
    // The connection cancels the stream when it closes (the session released) while the guest may
    // still write, and end its stdout, after: a closed stream takes neither (it throws).
    let open = true;
    const readable = new ReadableStream<AnyMessage>({
      start(controller) {
        const reader = new LineReader({
          line: (text) => {
            if (!open) return;
            const message = parseMessage(text);
            if (message !== null) controller.enqueue(message);
            else if (text.trim() !== '') log.warn({ name: 'acp-garbage', sid, line: text.slice(0, LOGGED_LINE_MAX) }, 'a line from the guest agent is not JSON-RPC: skipped');
          },
          oversized: () => log.warn({ name: 'acp-garbage', sid }, `a line from the guest agent over ${MAX_GUEST_LINE_BYTES} bytes was skipped`),
        }, MAX_GUEST_LINE_BYTES);
        child.stdout?.on('data', (chunk: Buffer) => reader.push(chunk));
        child.stdout?.once('end', () => {
          if (!open) return;
          open = false;
          controller.close();
        });
      },
      cancel() {
        open = false;
      },
    });
    const writable = new WritableStream<AnyMessage>({
      write(message) {
        if (child.stdin?.writable) child.stdin.write(`${JSON.stringify(message)}\n`);
      },
    });
    // A guest that exits while a line is being written must not take the host with an EPIPE.
    child.stdin?.on('error', () => {});
    return { readable, writable };
  }
}

function parseMessage(text: string): AnyMessage | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value) || (value as { jsonrpc?: unknown }).jsonrpc !== '2.0') return null;
  return value as AnyMessage;
}

/**
 * `work`, or `failure()` as soon as `signal` aborts (a guest's exit, a deadline). Its listener goes
 * with the race: a live session's many turns leave nothing behind on a long-lived signal.
 */
export async function untilAborted<T>(work: Promise<T>, signal: AbortSignal, failure: () => Error): Promise<T> {
  if (signal.aborted) throw failure();
  let onAbort!: () => void;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(failure());
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([work, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}
