// `turnhost chat [--session ID] [TEXT]`: one turn, or a prompt loop, through the daemon (started
// if none runs). Streams the reply as it arrives; asks clarify and approval questions at the
// terminal, or reads the answers from stdin lines when stdin is not a terminal. At a terminal,
// what the user types while a turn runs is queued (PROTOCOL.md §2.1) and the queue is shown as it
// changes; from a pipe, each line waits for the turn before it (a line may answer a question).
// Ctrl-C stops the running turn (and clears the queue); a second Ctrl-C leaves.
import { singleAgentName } from '../../agents/catalogue-config.js';
import { readFile } from 'node:fs/promises';
import { basename, extname } from 'node:path';
import { createInterface } from 'node:readline';
import type { TurnhostClient } from '../../client/turnhost-client.js';
import type { ApprovalRequest, ClarifyRequest, HandlerContext, SessionEvent } from '../../client/types.js';
import { connectOrLaunch, waitForHost } from '../daemon-client.js';
import { ensureHome } from '../home.js';
import { escapeControls, shownArguments } from '../../protocol/tool-arguments.js';
import { TerminalPrompt } from '../terminal-prompt.js';

export interface ChatOptions {
  session?: string;
  /** The agent asked for with --agent: a running daemon with another one is refused. */
  agent?: string;
  text?: string;
  /** Files for the first prompt (--attach), as paths. */
  attach?: string[];
  hostArgs: string[];
}

const EXIT_INTERRUPTED = 130;
/** `chat TEXT && next` must not go on after a failed turn (docs/CLI.md). */
const EXIT_TURN_FAILED = 1;

/** Answers to questions (and, from a pipe, the prompts): typed at a terminal or read from stdin lines. */
interface Input {
  next(prompt: string, signal?: AbortSignal): Promise<string | null>;
  close(): void;
}

/** Where the chat writes: the reply to stdout, everything about it to stderr; at a terminal, above the input line. */
interface Output {
  reply(text: string): void;
  note(text: string): void;
}

const plainOutput: Output = {
  reply: (text) => process.stdout.write(text),
  note: (text) => process.stderr.write(text),
};

export async function chatCommand(homeDir: string, options: ChatOptions): Promise<number> {
  const home = ensureHome(homeDir);
  const client = await connectOrLaunch(home, options.hostArgs);
  if (typeof client === 'string') {
    process.stderr.write(`turnhost chat: ${client}\n`);
    return 1;
  }
  // --agent picks the new session's agent from the running daemon's catalogue (AGENT.md §8).
  const agent = options.agent === undefined ? undefined : singleAgentName(options.agent);
  if (agent !== undefined) {
    const { agents } = await client.agents();
    if (!agents.some((listed) => listed.name === agent)) {
      const names = agents.map((listed) => listed.name).join(', ');
      process.stderr.write(`turnhost chat: the daemon in ${home} has no agent ${agent} (its agents: ${names}); name one of them, add it to the agent config (turnhost agents reload), or use another --home\n`);
      client.close();
      return 1;
    }
  }
  // readline takes Ctrl-C from the terminal; it is handed on as the process's SIGINT.
  const terminal = process.stdin.isTTY ? new TerminalPrompt(() => process.emit('SIGINT', 'SIGINT')) : null;
  const input: Input = terminal === null ? pipeInput() : { next: (prompt, signal) => terminal.ask(prompt, signal), close: () => terminal.close() };
  const output: Output = terminal === null ? plainOutput : { reply: (text) => terminal.write(process.stdout, text), note: (text) => terminal.write(process.stderr, text) };
  try {
    await waitForHost(() => client.hostStatus());
    const sid = await openSession(client, options.session, agent);
    const chat = new Chat(client, sid, input, output, await attachedFiles(client, sid, options.attach ?? []));
    if (options.text !== undefined) return await chat.turn(options.text);
    process.stderr.write(`session ${sid} (Ctrl-D to leave)\n`);
    if (terminal !== null) return await chat.typing(terminal);
    // Every line runs, as a script's lines would; the exit says whether any turn failed.
    let failed = false;
    for (;;) {
      const line = await input.next('> ');
      if (line === null) return failed ? EXIT_TURN_FAILED : 0;
      if (line.trim() === '') continue;
      const code = await chat.turn(line);
      if (code === EXIT_INTERRUPTED) return code;
      failed ||= code === EXIT_TURN_FAILED;
    }
  } catch (err) {
    process.stderr.write(`turnhost chat: ${(err as Error).message}\n`);
    return 1;
  } finally {
    input.close();
    client.close();
  }
}

/** The session named (resumed: it keeps its own agent), else a new one, with `agent` when given. */
async function openSession(client: TurnhostClient, sid: string | undefined, agent: string | undefined): Promise<string> {
  if (sid !== undefined) {
    try {
      return (await client.resumeSession(sid)).session_id;
    } catch {
      // not stored yet: a new session under that id
    }
  }
  return (await client.createSession({ ...(sid === undefined ? {} : { session_id: sid }), ...(agent === undefined ? {} : { agent }) })).session_id;
}

/** The types a file's name says, for those turnhost takes by default; the daemon checks the bytes. */
const TYPES_BY_EXTENSION: Readonly<Record<string, string>> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  pdf: 'application/pdf',
  txt: 'text/plain',
  md: 'text/markdown',
  csv: 'text/csv',
  json: 'application/json',
  mp3: 'audio/mpeg',
  wav: 'audio/wav',
};

/** --attach's files, stored for the session (PROTOCOL.md §2.4): the blocks the first prompt carries. */
async function attachedFiles(client: TurnhostClient, sid: string, paths: readonly string[]): Promise<Record<string, unknown>[]> {
  const blocks: Record<string, unknown>[] = [];
  for (const path of paths) {
    const name = basename(path);
    const mimeType = TYPES_BY_EXTENSION[extname(name).slice(1).toLowerCase()] ?? 'application/octet-stream';
    let bytes: Buffer;
    try {
      bytes = await readFile(path);
    } catch (err) {
      throw new Error(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    const put = await client.putBlob({ bytes, mimeType, name }, sid).catch((err: Error) => {
      throw new Error(`${path}: ${err.message}`);
    });
    const type = mimeType.startsWith('image/') ? 'image' : mimeType.startsWith('audio/') ? 'audio' : 'resource_link';
    blocks.push({ type, mimeType: put.mimeType, blob: put.blob, name });
  }
  return blocks;
}

/** Turn ids remembered as ended: a turn's end may arrive before the answer to its submit. */
const ENDED_KEPT = 100;

class Chat {
  private running: { turnId: string; interrupts: number } | null = null;
  /** Turns this chat submitted and waits for, by turn id. */
  private readonly awaited = new Map<string, (code: number) => void>();
  /** Each ended turn's exit code: 0, or EXIT_TURN_FAILED for a turn.error. */
  private readonly ended = new Map<string, number>();
  private leave: (code: number) => void = () => {};
  private readonly left = new Promise<number>((resolve) => (this.leave = resolve));
  private questionDone: Promise<void> = Promise.resolve();
  private shownQueue = 0;
  private atLineStart = true;
  /** Reasoning is written to stderr between the reply's fragments; this notes that one is open. */
  private inReasoning = false;
  private readonly toolNames = new Map<string, string>();
  private readonly styleErr = process.stderr.isTTY === true;
  /** A line break this client added (before a question): the reply's own next break is not doubled. */
  private addedBreak = false;

  constructor(
    private readonly client: TurnhostClient,
    private readonly sid: string,
    private readonly input: Input,
    private readonly output: Output,
    /** Files the first prompt carries (--attach); none after it. */
    private attachments: Record<string, unknown>[] = [],
  ) {
    void this.follow(client.events(sid));
    client.onClarify((request, context) => this.asking(() => this.clarify(request, context)));
    client.onApproval((request, context) => this.asking(() => this.approve(request, context)));
  }

  private async follow(events: AsyncIterable<SessionEvent>): Promise<void> {
    try {
      for await (const event of events) this.onEvent(event);
    } catch (err) {
      this.output.note(`turnhost chat: ${(err as Error).message}\n`);
      this.leave(1);
    }
  }

  /**
   * Runs one turn (queued behind a running one); resolves 0 when it ends, EXIT_TURN_FAILED when it
   * ends in turn.error or could not be submitted, 130 when the user left with a second Ctrl-C.
   */
  async turn(text: string): Promise<number> {
    return this.withCtrlC(async () => {
      const submitted = await this.submit(text);
      if (submitted === 'failed') return EXIT_TURN_FAILED;
      if (submitted === null) return 0;
      return Promise.race([submitted.ended, this.left]);
    });
  }

  /** At a terminal: every line typed is submitted at once (queued while a turn runs); Ctrl-D waits for what is left, then leaves. */
  async typing(terminal: TerminalPrompt): Promise<number> {
    return this.withCtrlC(async () => {
      const ends: Promise<number>[] = [];
      terminal.showLinePrompt('> ');
      const reading = (async (): Promise<number> => {
        for (;;) {
          const line = await terminal.nextLine();
          if (line === null) break;
          if (line.trim() === '') continue;
          const submitted = await this.submit(line);
          if (submitted !== null && submitted !== 'failed') ends.push(submitted.ended);
        }
        await Promise.all(ends);
        return 0;
      })();
      return Promise.race([reading, this.left]);
    });
  }

  private async withCtrlC(body: () => Promise<number>): Promise<number> {
    const onSigint = (): void => this.interrupt();
    process.on('SIGINT', onSigint);
    try {
      return await body();
    } finally {
      process.off('SIGINT', onSigint);
    }
  }

  /** Submits; `ended` settles with the turn's exit code when it ends; null when it has none to wait for (steered). */
  private async submit(text: string): Promise<{ ended: Promise<number> } | null | 'failed'> {
    try {
      const content = this.attachments;
      this.attachments = [];
      const result = await this.client.submit(this.sid, text, content.length === 0 ? {} : { content });
      if (result.status === 'queued') this.output.note(`(queued, #${result.position}: it runs when the turns before it end)\n`);
      if (result.status === 'steered') this.output.note('(handed to the running turn)\n');
      const turnId = result.status === 'steered' ? undefined : result.turn_id;
      if (turnId === undefined) return null;
      const code = this.ended.get(turnId);
      if (code !== undefined) return { ended: Promise.resolve(code) };
      return { ended: new Promise((resolve) => this.awaited.set(turnId, resolve)) };
    } catch (err) {
      this.output.note(`turnhost chat: ${(err as Error).message}\n`);
      return 'failed';
    }
  }

  private async asking<T>(question: () => Promise<T>): Promise<T> {
    let done = (): void => {};
    const previous = this.questionDone;
    this.questionDone = new Promise((resolve) => (done = resolve));
    try {
      await previous;
      return await question();
    } finally {
      done();
    }
  }

  interrupt(): void {
    if (this.running === null) {
      this.leave(EXIT_INTERRUPTED);
      return;
    }
    this.running.interrupts++;
    if (this.running.interrupts > 1) {
      this.leave(EXIT_INTERRUPTED);
      return;
    }
    this.output.note('\n(interrupting; Ctrl-C again to leave)\n');
    // Only this turn: a Ctrl-C that lands as the turn ends must not stop the next one.
    this.client.interrupt(this.sid, { turn_id: this.running.turnId }).catch(() => {});
  }

  private turnEnded(turnId: string, code: number): void {
    if (this.running?.turnId === turnId) this.running = null;
    this.ended.set(turnId, code);
    if (this.ended.size > ENDED_KEPT) this.ended.delete(this.ended.keys().next().value!);
    this.awaited.get(turnId)?.(code);
    this.awaited.delete(turnId);
  }

  /** The queue as it changes: what waits, in order, or that it has emptied. */
  private showQueue(items: { text: string }[]): void {
    if (items.length === 0 && this.shownQueue === 0) return;
    this.shownQueue = items.length;
    this.endLine();
    if (items.length === 0) this.output.note('[queue] empty\n');
    else this.output.note(`[queue] ${items.length} waiting: ${items.map((item, i) => `${i + 1}. ${oneLine(item.text).slice(0, 40)}`).join('  ')}\n`);
  }

  private write(text: string): void {
    this.endReasoning();
    const out = this.addedBreak && text.startsWith('\n') ? text.slice(1) : text;
    this.addedBreak = false;
    if (out === '') return;
    this.output.reply(out);
    this.atLineStart = out.endsWith('\n');
  }

  private endLine(): void {
    if (this.atLineStart) return;
    this.write('\n');
    this.addedBreak = true;
  }

  private onEvent(event: SessionEvent): void {
    const p = event.payload as Record<string, unknown>;
    switch (event.type) {
      case 'message.delta':
        this.write(String(p['text'] ?? ''));
        return;
      case 'reasoning.delta':
        this.reasoning(String(p['text'] ?? ''));
        return;
      case 'tool.start':
        this.endLine();
        this.toolNames.set(String(p['id']), String(p['name']));
        this.note(`→ ${String(p['name'])}(${oneLine(asTheyWillRun(String(p['arguments'] ?? '')))})`);
        return;
      case 'tool.complete': {
        const name = this.toolNames.get(String(p['id'])) ?? 'tool';
        this.toolNames.delete(String(p['id']));
        this.note(`← ${name} ${p['ok'] ? 'ok' : 'failed'}${p['summary'] ? `: ${oneLine(String(p['summary']))}` : ''}`);
        return;
      }
      case 'status.update':
        // turn.end says it: "(cut by the token limit)".
        if (p['kind'] === 'length') return;
        this.output.note(`[${String(p['kind'])}] ${String(p['text'])}\n`);
        return;
      case 'error':
        this.output.note(`error: ${String(p['message'])}\n`);
        return;
      case 'request.cancel':
        this.output.note(`(question withdrawn: ${String(p['reason'])})\n`);
        return;
      case 'replay.partial':
        this.output.note('(reconnected: some of what happened meanwhile is only in `turnhost history`)\n');
        return;
      case 'turn.started':
        this.running = { turnId: String(p['turn_id']), interrupts: 0 };
        return;
      case 'session.queue':
        this.showQueue(Array.isArray(p['items']) ? (p['items'] as { text: string }[]) : []);
        return;
      case 'turn.end':
        this.endLine();
        if (p['interrupted']) this.output.note('(interrupted)\n');
        if (p['finish_reason'] === 'length') this.output.note('(cut by the token limit)\n');
        if (typeof p['usage'] === 'object' && p['usage'] !== null) this.note(usageLine(p['usage'] as Record<string, number>));
        this.turnEnded(String(p['turn_id']), 0);
        return;
      case 'turn.error':
        this.endLine();
        this.output.note(`turn failed: ${String(p['message'])} (${String(p['reason'])})\n`);
        this.turnEnded(String(p['turn_id']), EXIT_TURN_FAILED);
        return;
    }
  }

  /**
   * A question comes straight from the socket, while the events before it are still on their way
   * through the event iterator: one turn of the loop lets them print first, then the question gets
   * a line of its own.
   */
  private async beforeQuestion(): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve));
    this.endReasoning();
    this.endLine();
  }

  /**
   * Dimmed at a terminal, each fragment on its own (the input line is drawn between fragments and
   * must not be dimmed); marked `[reasoning]` where stderr is a file or a pipe.
   */
  private reasoning(text: string): void {
    if (text === '') return;
    if (!this.inReasoning) {
      this.endLine();
      if (!this.styleErr) this.output.note('[reasoning] ');
      this.inReasoning = true;
    }
    this.output.note(this.styleErr ? `\x1b[2m${text}\x1b[22m` : text);
  }

  private endReasoning(): void {
    if (!this.inReasoning) return;
    this.inReasoning = false;
    this.output.note('\n');
  }

  /** A line about the turn (a tool call, usage) on stderr, never inside the reply's text. */
  private note(text: string): void {
    this.endReasoning();
    this.output.note(`${text}\n`);
  }

  /** A question whose arguments were cut offers `a`: the whole arguments are printed, and it is asked again. */
  private async approve(request: ApprovalRequest, context: HandlerContext): Promise<boolean | null> {
    await this.beforeQuestion();
    const cut = request.arguments !== undefined && shownArguments(request.arguments).omitted > 0;
    const prompt = `approve: ${escapeControls(request.question)}? [y/N${cut ? '/a: show all arguments' : ''}] `;
    for (;;) {
      const reply = await this.input.next(prompt, context.signal);
      if (reply === null) return null;
      if (cut && /^a(ll)?$/i.test(reply.trim())) {
        this.output.note(`arguments of ${escapeControls(request.tool ?? 'the tool')}: ${shownArguments(request.arguments, Infinity).text}\n`);
        continue;
      }
      return /^y(es)?$/i.test(reply.trim());
    }
  }

  /** Null when the question was withdrawn or input ended. */
  private async clarify(request: ClarifyRequest, context: HandlerContext): Promise<string | Record<string, string> | null> {
    await this.beforeQuestion();
    if (request.questions) {
      const answers: Record<string, string> = {};
      for (const q of request.questions) {
        const reply = await this.input.next(`${escapeControls(String(q.question))} `, context.signal);
        if (reply === null) return null;
        answers[q.id] = reply;
      }
      return answers;
    }
    const choices = request.choices ? ` (${request.choices.join(' / ')})` : '';
    return this.input.next(`${escapeControls(String(request.question))}${escapeControls(choices)} `, context.signal);
  }
}

const NOTE_MAX = 200;

/** Model-made text on one line, with nothing in it that a terminal would act on. */
function oneLine(text: string): string {
  const flat = escapeControls(text.replace(/\s*\n\s*/g, ' '));
  return flat.length > NOTE_MAX ? `${flat.slice(0, NOTE_MAX - 1)}…` : flat;
}

/** Arguments that parse are shown parsed (of two equal keys, the value that wins); others as they came. */
function asTheyWillRun(argumentsText: string): string {
  try {
    const parsed: unknown = JSON.parse(argumentsText);
    return typeof parsed === 'object' && parsed !== null ? shownArguments(parsed, Infinity).text : argumentsText;
  } catch {
    return argumentsText;
  }
}

function usageLine(u: Record<string, number>): string {
  const calls = u['calls'] ?? 0;
  return `[usage] ${u['prompt_tokens'] ?? 0} prompt + ${u['completion_tokens'] ?? 0} completion tokens, ${calls} model call${calls === 1 ? '' : 's'}`;
}

function pipeInput(): Input {
  const lines: string[] = [];
  const waiters: ((line: string | null) => void)[] = [];
  let ended = false;
  const rl = createInterface({ input: process.stdin, terminal: false });
  rl.on('line', (line) => {
    const waiter = waiters.shift();
    if (waiter) waiter(line);
    else lines.push(line);
  });
  rl.on('close', () => {
    ended = true;
    for (const waiter of waiters.splice(0)) waiter(null);
  });
  return {
    next(prompt, signal) {
      // Answers from a pipe: each question is still shown with the answer it got, so that a
      // log of the run reads as a conversation.
      const echo = (line: string | null): string | null => {
        if (line !== null) process.stderr.write(`${prompt}${line}\n`);
        return line;
      };
      if (lines.length > 0) return Promise.resolve(echo(lines.shift()!));
      if (ended) return Promise.resolve(null);
      return new Promise((resolve) => {
        const waiter = (line: string | null) => resolve(echo(line));
        waiters.push(waiter);
        signal?.addEventListener(
          'abort',
          () => {
            const at = waiters.indexOf(waiter);
            if (at !== -1) waiters.splice(at, 1);
            resolve(null);
          },
          { once: true },
        );
      });
    },
    close: () => rl.close(),
  };
}
