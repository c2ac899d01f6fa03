// `POST /v1/ag-ui` (PROTOCOL.md §7.1), and `POST /v1/ag-ui/{agent}` for each agent of the
// catalogue (AGENT.md §8: a CopilotKit `HttpAgent` per agent; a new thread is made with that agent,
// and a thread keeps the agent it was made with): AG-UI's RunAgentInput in, AG-UI events out as server-sent
// events. A run is a subscriber of the gateway like any client: `threadId` is the session,
// `runId` the submit's client_message_id (a repeated run runs nothing twice), the last user
// message the prompt. The run follows its own turn: a queued run waits for its turn to start, and
// a question of the agent ends the run with an interrupt while the turn waits; the next run's
// `resume` answers it and follows the rest of that turn. A stream that goes away leaves the turn
// running in turnhost.
import { ContentRefused } from '../protocol/content.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { EventType, type BaseEvent, type RunAgentInput } from '@ag-ui/core';
import { RunAgentInputSchema } from '@ag-ui/core/schemas';
import { nextClientId } from '../actors/daemon/client-connection.js';
import { authorize, callMethod } from '../actors/daemon/client-methods.js';
import { answerServerRequest } from '../actors/daemon/methods/answers.js';
import { clientContext, type ClientContext } from '../actors/daemon/client-context.js';
import { ClientOutput } from '../actors/daemon/client-output.js';
import type { GatewayMsg, SessionPeek } from '../actors/daemon/supervisor-messages.js';
import { ask, tell, SECOND_MS, type Ref } from '../actors/runtime.js';
import { ErrorCodes, RpcError } from '../protocol/client-rpc.js';
import { IDENTIFIER_RULE, isIdentifier, isRecord, type UnknownRecord } from '../protocol/fields.js';
import { AgUiTurn } from './ag-ui-events.js';
import { answerFrom, type Question } from './question-answer.js';
import type { EdgeOptions } from './edge-options.js';
import { EVENT_STREAM_HEADERS, KEEPALIVE_MS } from './event-stream.js';
import { HttpFailure, readJsonBody } from './http-answers.js';
import { traced } from './trace-headers.js';
import type { Places } from './places.js';

const PEEK_TIMEOUT_MS = 10 * SECOND_MS;
/** The AG-UI runs one credential may have open at once (PROTOCOL.md §5.1): a flood of runs is refused, not queued. */
export const MAX_OPEN_RUNS = 64;

export async function agUiRun(req: IncomingMessage, res: ServerResponse, options: EdgeOptions, runs: Places, agent: string | null = null): Promise<void> {
  const input = parseInput(await readJsonBody(req));
  if (!options.admit()) throw new RpcError(ErrorCodes.tooManyClients, `too many clients: this daemon serves at most ${options.maxClients} connections at once (--max-clients)`);
  const release = runs.take();
  if (release === null) throw new HttpFailure(429, ErrorCodes.tooManyClients, `too many AG-UI runs open at once for this credential (at most ${MAX_OPEN_RUNS}): try again when one has ended`);
  res.once('close', release);
  const stream = openStream(res, options);
  const id = nextClientId();
  const ctx = clientContext(options.shared, id);
  const run = new Run(input, stream, () => tell(ctx.gateway, { kind: 'client-closed', clientId: id }));
  tell(ctx.gateway, { kind: 'client-open', sink: { id, write: (line) => run.line(line) } });
  res.once('close', () => {
    const waiting = run.stop();
    if (waiting !== null) void withdraw(input.threadId, waiting, ctx).catch(() => {});
  });
  stream.emit({ type: EventType.RUN_STARTED, threadId: input.threadId, runId: input.runId } as BaseEvent);
  try {
    const refusal = unsupported(input);
    if (refusal !== null) return run.error('unsupported', refusal);
    if (input.resume !== undefined && input.resume.length > 0) await resume(input, run, ctx);
    else await submit(input, traced(req), run, ctx, agent);
  } catch (err) {
    run.error(errorCode(err), (err as Error).message);
  }
}

/** A turnhost error's code as RUN_ERROR's; a session that is not the caller's to see is `not_found` (PROTOCOL.md §5.6). */
function errorCode(err: unknown): string {
  if (!(err instanceof RpcError)) return 'internal';
  return err.code === ErrorCodes.sessionNotFound ? 'not_found' : String(err.code);
}

function parseInput(body: UnknownRecord): RunAgentInput {
  const parsed = RunAgentInputSchema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new RpcError(ErrorCodes.invalidParams, `invalid RunAgentInput: ${issue ? `${issue.path.join('.') || 'body'}: ${issue.message}` : 'not one'}`);
  }
  const input = parsed.data as RunAgentInput;
  for (const [name, value] of [['threadId', input.threadId], ['runId', input.runId]] as const) {
    if (!isIdentifier(value)) throw new RpcError(ErrorCodes.invalidParams, `invalid RunAgentInput: ${name} ${IDENTIFIER_RULE}`);
  }
  return input;
}

/** What AG-UI has and turnhost does not: named, never dropped. */
function unsupported(input: RunAgentInput): string | null {
  if (input.tools.length > 0) return `front-end tools are not supported by turnhost (the run names ${input.tools.map((t) => t.name).join(', ')}): its agent's tools run in the host`;
  if (isRecord(input.state) && Object.keys(input.state).length > 0) return 'shared state is not supported by turnhost: a session\'s state is its history';
  return null;
}

interface Stream {
  emit(event: BaseEvent): void;
  end(): void;
}

function openStream(res: ServerResponse, options: EdgeOptions): Stream {
  res.writeHead(200, EVENT_STREAM_HEADERS);
  res.flushHeaders();
  const output = new ClientOutput(res, options.limits, (overrun, unreadBytes) => {
    options.metrics.dropped(overrun.why);
    options.log.warn({ unreadBytes, maxUnreadBytes: overrun.maxUnreadBytes }, `AG-UI stream ${overrun.why}: disconnecting it`);
  });
  // A stopping daemon ends the stream after what it holds, as it ends every client's.
  const untrack = options.track(output);
  options.metrics.opened('sse');
  const keepalive = setInterval(() => output.write(': keepalive\n\n'), KEEPALIVE_MS);
  res.once('close', () => {
    clearInterval(keepalive);
    untrack();
    options.metrics.closed('sse');
  });
  return {
    emit: (event) => output.write(`data: ${JSON.stringify(event)}\n\n`),
    end: () => {
      clearInterval(keepalive);
      output.end();
    },
  };
}

/** A new prompt, or the same run again (`runId` seen before): then nothing runs twice. */
async function submit(input: RunAgentInput, trace: ReturnType<typeof traced>, run: Run, ctx: ClientContext, agent: string | null): Promise<void> {
  const text = lastUserText(input);
  if (text === null) return run.error('invalid', 'the run has no user message to send, and no resume');
  const content = lastUserContent(input);
  // A member's new thread is a session they make (and own), as is one of a named agent; the
  // owner's thread of the default agent is made by its first prompt.
  const isNew = (await (await ctx.reader())?.session(input.threadId)) === undefined;
  if (isNew && (!ctx.identity.admin || agent !== null)) await callMethod('session.create', { session_id: input.threadId, ...(agent === null ? {} : { agent }) }, ctx);
  const edit = await editPoint(input, ctx);
  const params = { session_id: input.threadId, client_message_id: input.runId, on_busy: 'queue', ...trace };
  const answer = (await (edit === null ? callMethod('prompt.submit', { ...params, ...(content === null ? { text } : { content }) }, ctx) : callMethod('prompt.edit', { ...params, ...edit }, ctx))) as {
    status: string;
    turn_id: string;
    state?: string;
    queue_id?: string;
  };
  if (answer.status === 'duplicate' && answer.state !== 'queued' && answer.state !== 'running') return replayDone(input, run, ctx, answer.turn_id);
  const started = answer.status === 'duplicate' && answer.state === 'running';
  const waiting = { turnId: answer.turn_id, ...(answer.queue_id === undefined ? {} : { queueId: answer.queue_id }) };
  // The client may have gone while the submit was on its way: then nobody waits for the turn.
  if (!run.follow(waiting.turnId, started, waiting.queueId) && !started) await withdraw(input.threadId, waiting, ctx);
}

/**
 * The run's client went away before its turn started: nobody waits for it, so it does not run
 * (a queued prompt leaves the queue; a turn waiting for a worker is stopped, the queue kept).
 */
async function withdraw(sid: string, waiting: Waiting, ctx: ClientContext): Promise<void> {
  if (waiting.queueId !== undefined) await callMethod('session.queue.update', { session_id: sid, queue_id: waiting.queueId, action: 'delete' }, ctx);
  else await callMethod('session.interrupt', { session_id: sid, turn_id: waiting.turnId, keep_queue: true }, ctx);
}

/** A repeated run whose turn is over: its reply from the history, and the run is done. */
async function replayDone(input: RunAgentInput, run: Run, ctx: ClientContext, turnId: string): Promise<void> {
  const { messages } = (await callMethod('session.history', { session_id: input.threadId }, ctx)) as { messages: { role: string; content: string; turn_id: string | null }[] };
  const turn = run.turn(turnId);
  for (const message of messages) if (message.turn_id === turnId && message.role === 'assistant') turn.event('message.complete', { text: message.content });
  run.end(() => turn.finish({ type: 'success' }));
}

/** The answers to the questions the last run ended with; this run follows the rest of their turn. */
async function resume(input: RunAgentInput, run: Run, ctx: ClientContext): Promise<void> {
  const sid = input.threadId;
  if (!ctx.identity.admin) await authorize('session.history', { session_id: sid }, ctx);
  // Attached before the answers go, so nothing the turn does after them is missed.
  tell(ctx.gateway, { kind: 'attach', sid, clientId: ctx.clientId });
  const peek = await ask(ctx.gateway, (replyTo: Ref<SessionPeek>): GatewayMsg => ({ kind: 'peek', sid, replyTo }), PEEK_TIMEOUT_MS);
  const open = new Map((peek.open_requests as Question[]).map((q) => [q.id, q]));
  const entries = input.resume!;
  const missing = entries.find((entry) => !open.has(entry.interruptId));
  if (missing !== undefined) return run.error('expired', `no open question ${missing.interruptId} in session ${sid}: it was answered, timed out, or its turn ended`);
  run.follow(entries[0]!.interruptId, true);
  for (const entry of entries) {
    if (!ctx.identity.admin) await authorize('request.answer', { request_id: entry.interruptId }, ctx);
    const outcome = await answerServerRequest(ctx, entry.interruptId, answerFrom(open.get(entry.interruptId)!, entry.status, entry.payload));
    if (outcome.status !== 'ok') return run.error('expired', `the question ${entry.interruptId} is no longer open`);
  }
}

/**
 * A run whose user messages part from the session's stored prompts at an earlier one is an edit
 * there (PROTOCOL.md §2.2: CopilotKit's edit and regenerate send the history up to the prompt they
 * change): the turn of the first prompt that differs, or, when the run's prompts are the stored
 * ones cut short, of its last; the run's text at that place. Null: a new prompt after the stored.
 */
async function editPoint(input: RunAgentInput, ctx: ClientContext): Promise<{ turn_id: string; text: string } | null> {
  if ((await (await ctx.reader())?.session(input.threadId)) === undefined) return null;
  const { messages } = (await callMethod('session.history', { session_id: input.threadId }, ctx)) as { messages: { role: string; content: string; turn_id: string | null }[] };
  // The prompts of turns that have a reply: a turn running (another client's, say) is not the run's to edit.
  const answered = new Set(messages.filter((m) => m.role === 'assistant' && m.turn_id !== null).map((m) => m.turn_id));
  const stored = messages.filter((m) => m.role === 'user' && m.turn_id !== null && answered.has(m.turn_id));
  const sent = input.messages.filter((m) => m.role === 'user').map((m) => userText(m) ?? '');
  const differs = stored.findIndex((m, i) => i < sent.length && sent[i] !== m.content);
  const at = differs !== -1 ? differs : sent.length <= stored.length ? sent.length - 1 : -1;
  return at < 0 ? null : { turn_id: stored[at]!.turn_id!, text: sent[at]! };
}

function lastUserText(input: RunAgentInput): string | null {
  const user = [...input.messages].reverse().find((m) => m.role === 'user');
  return user === undefined ? null : userText(user);
}

/**
 * The last user message's parts as turnhost's blocks (PROTOCOL.md §2.4), when it carries more than
 * text: images and audio as they are, documents as files, a `url` source as a link (never fetched),
 * legacy `binary` parts by their type. Null for a message of text alone.
 */
function lastUserContent(input: RunAgentInput): Record<string, unknown>[] | null {
  const user = [...input.messages].reverse().find((m) => m.role === 'user');
  const parts = (user as { content?: unknown } | undefined)?.content;
  if (!Array.isArray(parts) || !parts.some((part) => isRecord(part) && part['type'] !== 'text')) return null;
  return parts.filter(isRecord).map((part, index) => turnhostBlock(part, index));
}

function turnhostBlock(part: UnknownRecord, index: number): Record<string, unknown> {
  const type = part['type'];
  if (type === 'text') return { type: 'text', text: String(part['text'] ?? '') };
  const legacy = type === 'binary';
  const source = isRecord(part['source']) ? part['source'] : legacy ? { type: part['data'] === undefined ? 'url' : 'data', value: part['data'] ?? part['url'], mimeType: part['mimeType'] } : {};
  const mimeType = typeof source['mimeType'] === 'string' ? source['mimeType'] : typeof part['mimeType'] === 'string' ? part['mimeType'] : undefined;
  const metadata = isRecord(part['metadata']) ? part['metadata'] : {};
  const name = typeof part['filename'] === 'string' ? part['filename'] : typeof metadata['filename'] === 'string' ? metadata['filename'] : undefined;
  const kind = legacy ? (mimeType?.startsWith('image/') ? 'image' : mimeType?.startsWith('audio/') ? 'audio' : 'document') : type;
  if (source['type'] === 'url') return { type: 'resource_link', name: name ?? 'link', uri: source['value'], ...(mimeType === undefined ? {} : { mimeType }) };
  // A `file` source is a provider's handle, opaque to turnhost: it cannot be read, so it is refused.
  if (source['type'] !== 'data') throw new ContentRefused(400, `content[${index}]: a ${String(type)} part's source must be data or url, not ${String(source['type'])}`);
  if (kind === 'image' || kind === 'audio') return { type: kind, mimeType, data: source['value'], ...(name === undefined ? {} : { name }) };
  return { type: 'resource_link', name: name ?? 'document', mimeType, data: source['value'] };
}

function userText(user: RunAgentInput['messages'][number]): string | null {
  const { content } = user as { content: unknown };
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return null;
  return content.map((part: unknown) => (isRecord(part) && part['type'] === 'text' ? String(part['text'] ?? '') : '')).join('');
}

/** A run's turn before it started: queued behind another, or waiting for a worker. */
interface Waiting {
  turnId: string;
  queueId?: string;
}

type Phase = { kind: 'unknown' } | ({ kind: 'waiting' } & Waiting) | { kind: 'following'; turn: AgUiTurn } | { kind: 'over' };

/**
 * What the gateway sends this run, turned into AG-UI events: lines that come before the run knows
 * its turn are held, since the submit's answer and the turn's first events take different paths.
 */
class Run {
  private phase: Phase = { kind: 'unknown' };
  private held: string[] = [];

  constructor(
    private readonly input: RunAgentInput,
    private readonly stream: Stream,
    private readonly detach: () => void,
  ) {}

  /** An AG-UI view of a turn, naming its messages after `turnId`. */
  turn(turnId: string): AgUiTurn {
    return new AgUiTurn(this.input.threadId, this.input.runId, turnId, (event) => this.stream.emit(event));
  }

  /** From here on, the turn `turnId`'s events; `started`: it runs already (a resume, a repeated run). */
  /** False when the run is over already (its client went away). */
  follow(turnId: string, started: boolean, queueId?: string): boolean {
    if (this.phase.kind === 'over') return false;
    this.phase = started ? { kind: 'following', turn: this.turn(turnId) } : { kind: 'waiting', turnId, ...(queueId === undefined ? {} : { queueId }) };
    const held = this.held;
    this.held = [];
    for (const line of held) this.line(line);
    return true;
  }

  line(line: string | Buffer): void {
    const text = typeof line === 'string' ? line : line.toString('utf8');
    if (this.phase.kind === 'unknown') {
      this.held.push(text);
      return;
    }
    if (this.phase.kind === 'over') return;
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      return;
    }
    if (!isRecord(message) || !isRecord(message['params'])) return;
    const params = message['params'];
    if (params['session_id'] !== this.input.threadId) return;
    if (message['method'] === 'event') this.event(String(params['type']), isRecord(params['payload']) ? params['payload'] : {});
    else if (typeof message['id'] === 'string' && typeof message['method'] === 'string' && this.phase.kind === 'following') {
      const turn = this.phase.turn;
      this.end(() => turn.interrupt([{ id: message['id'] as string, method: message['method'] as string, params }]));
    }
  }

  error(code: string, message: string): void {
    this.end(() => this.turn(this.input.runId).fail(code, message));
  }

  /** The last events of the run, then the stream ends; the turn, if any, goes on in turnhost. */
  end(last: () => void): void {
    if (this.phase.kind === 'over') return;
    this.phase = { kind: 'over' };
    last();
    this.stream.end();
    this.detach();
  }

  /** The client went away; the turn it had not yet seen start, if any. */
  stop(): Waiting | null {
    if (this.phase.kind === 'over') return null;
    const waiting = this.phase.kind === 'waiting' ? { turnId: this.phase.turnId, ...(this.phase.queueId === undefined ? {} : { queueId: this.phase.queueId }) } : null;
    this.phase = { kind: 'over' };
    this.detach();
    return waiting;
  }

  private event(type: string, payload: UnknownRecord): void {
    if (this.phase.kind === 'waiting') {
      if (payload['turn_id'] !== this.phase.turnId) return; // an earlier turn's
      this.phase = { kind: 'following', turn: this.turn(this.phase.turnId) };
      if (type === 'turn.started') return;
    }
    if (this.phase.kind !== 'following') return;
    const turn = this.phase.turn;
    if (turn.event(type, payload)) this.end(() => {});
  }
}
