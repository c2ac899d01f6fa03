// One turn of a guest agent (AGENT.md §6): the prompt sent as `session/prompt`, the guest's
// updates streamed as events, its tool calls kept in the history in the Chat Completions shape,
// its questions asked through the approval policy, an interrupt sent as `session/cancel`.
import {
  RequestError,
  type ContentBlock as AcpBlock,
  type CreateElicitationRequest,
  type PromptResponse,
  type RequestPermissionRequest,
  type RequestPermissionResponse,
  type SessionUpdate,
  type StopReason,
  type ToolCallContent,
  type ToolKind,
} from '@agentclientprotocol/sdk';
import { AgentFailure, type TurnContext, type TurnResult } from '../agent.js';
import { endTool, nameTool, startTool } from '../genai-spans.js';
import type { RecordedSpan } from '../span-recorder.js';
import type { Policy } from '../model/approval.js';
import type { GuestConfig } from './guest-config.js';
import { contradiction, decodeBytes, DEFAULT_CONTENT_BOUNDS, describeBlock, type ContentBlock as StoredBlock, type MessagePart } from '../../protocol/content.js';
import { guestPrompt } from './guest-prompt.js';
import {
  type PartSources,
  approvalParams,
  argumentsText,
  chooseKind,
  clarifyParams,
  elicitationAnswer,
  permissionOutcome,
  STOP_WORDS,
  toolName,
  toolParts,
  toolResultText,
  turnStop,
  updateEvent,
} from './guest-mapping.js';
import { EXIT_WAIT_MS, untilAborted } from './guest-process.js';
import { contextUsage, responseUsage, type GuestUsage } from './guest-usage.js';
import type { LiveSession, TurnSink } from './live-session.js';

/** A tool call the guest made in this turn, until its result is in. */
interface OpenToolCall {
  kind: ToolKind | null | undefined;
  title: string | null | undefined;
  rawInput: unknown;
  /** The reply text the guest wrote before it: the assistant message that carries the call. */
  textBefore: string;
  /** tool.start was sent: once its input is known (a guest may send the call before its input), or asked about, or done. */
  announced: boolean;
  /** Its `execute_tool` span, from its first sight to its result (null: tracing is off). */
  span: RecordedSpan | null;
  /** What the guest last said it holds (diffs, terminals): a terminal of turnhost's in it is shown as it runs. */
  content: readonly ToolCallContent[];
  /** A tool.update of a running terminal's output waits this long at most (null: none pending). */
  updateTimer: NodeJS.Timeout | null;
  /** When its last tool.update went out (ms). */
  updatedAt: number;
}

/**
 * A terminal's output as it comes brings its tool call up to date at most this often: the
 * clients (and the daemon's event log, which outlives a crash of the host) see what it printed.
 */
const TERMINAL_UPDATE_MS = 250;


const CANCELLED: RequestPermissionResponse = { outcome: { outcome: 'cancelled' } };

export interface GuestTurnOutcome {
  result: TurnResult;
  /** The messages the session stores for this turn (the prompt, the tool calls and results, the reply): the history the guest has seen. */
  storedMessages: number;
}

export async function runGuestTurn(config: GuestConfig, live: LiveSession, turn: TurnContext, policy: Policy, agentName: string): Promise<GuestTurnOutcome> {
  const record = new TurnRecord(turn, (terminalId) => live.terminals.part(terminalId));
  live.sink = turnSink(record, turn, policy);
  const cancel = cancelOnInterrupt(config, live, turn);
  let stopReason: StopReason;
  try {
    const response = await prompt(config, live, turn, await guestPrompt(turn, live.promptCapabilities, live.cwd, agentName));
    stopReason = response.stopReason;
    record.reported(responseUsage(response));
  } catch (err) {
    // An interrupt that ended the guest (no answer within cancel_timeout_s) still ends the turn interrupted.
    if (!turn.signal.aborted) throw err;
    stopReason = 'cancelled';
  } finally {
    cancel.dispose();
    // The updates that came before the prompt's answer are all applied (their images stored) before the reply is read.
    await record.settled();
    live.sink = null;
  }
  const stop = turnStop(stopReason);
  if (stop.status !== undefined) turn.emit({ type: 'status.update', kind: stop.status, text: STOP_WORDS[stop.status] });
  const reply = record.finish();
  // A guest may cancel by itself (Codex's reject option `abort`): the turn ends interrupted all the same.
  const interrupted = turn.signal.aborted || stop.interrupted;
  const result: TurnResult = {
    reply,
    ...(record.usage ? { usage: record.usage.usage, ...(record.usage.model === undefined ? {} : { model: record.usage.model }) } : {}),
    ...(stop.finishReason ? { finishReason: stop.finishReason } : {}),
    ...(stop.interrupted ? { interrupted: true } : {}),
    ...record.replyParts(),
  };
  // The host stores an interrupted turn's reply only when it has text.
  const replyStored = !interrupted || reply !== '';
  return { result, storedMessages: 1 + record.appended + (replyStored ? 1 : 0) };
}

/** session/prompt, failing clearly when the guest exits or answers with an error. */
async function prompt(config: GuestConfig, live: LiveSession, turn: TurnContext, blocks: AcpBlock[]): Promise<PromptResponse> {
  const exitFailure = () => new AgentFailure(live.process.endedFor === null ? 'upstream' : 'resources', `${live.process.describeExit()} during the turn`);
  try {
    const traced = turn.trace.span === null ? {} : { _meta: { traceparent: turn.trace.span.traceparent } };
    const request = live.process.connection.agent.request('session/prompt', { sessionId: live.sessionId, prompt: blocks, ...traced });
    return await untilAborted(request, live.process.gone, exitFailure);
  } catch (err) {
    if (err instanceof AgentFailure) throw err;
    // The guest's stdout closed before its exit was seen: the exit says more than the closed connection.
    if (live.process.connection.signal.aborted && (await live.process.exitedWithin(EXIT_WAIT_MS))) throw exitFailure();
    const message = err instanceof RequestError ? err.message : (err as Error).message;
    throw new AgentFailure('upstream', `the guest agent ${JSON.stringify(config.command)} answered session/prompt with an error: ${message}`);
  }
}

/**
 * An interrupt sends session/cancel; a guest whose prompt has not returned within
 * cancel_timeout_s is ended (its pending prompt then fails, and the turn ends interrupted).
 */
function cancelOnInterrupt(config: GuestConfig, live: LiveSession, turn: TurnContext): { dispose(): void } {
  let timer: NodeJS.Timeout | null = null;
  const onAbort = (): void => {
    void live.process.connection.agent.notify('session/cancel', { sessionId: live.sessionId }).catch(() => {});
    timer = setTimeout(() => void live.process.end(), config.cancelTimeoutMs);
  };
  if (turn.signal.aborted) onAbort();
  else turn.signal.addEventListener('abort', onAbort, { once: true });
  return {
    dispose() {
      turn.signal.removeEventListener('abort', onAbort);
      if (timer !== null) clearTimeout(timer);
    },
  };
}

function turnSink(record: TurnRecord, turn: TurnContext, policy: Policy): TurnSink {
  return {
    update: (update) => record.update(update),
    async permission(request: RequestPermissionRequest): Promise<RequestPermissionResponse> {
      // The request may name the call without its kind: the call as the turn knows it has it, once the updates before it are applied.
      await record.settled();
      const asked = record.toolCallAsked(request);
      const decision = policy({ name: toolName(asked.toolCall.kind) });
      if (decision === 'allow') return chooseKind(request.options, 'allow_once');
      if (decision === 'deny') return chooseKind(request.options, 'reject_once');
      const answer = await turn.ask('approval.request', approvalParams(asked));
      if (turn.signal.aborted) return CANCELLED;
      return permissionOutcome(request.options, answer);
    },
    async elicitation(request: CreateElicitationRequest) {
      const answer = await turn.ask('clarify.request', clarifyParams(request));
      return elicitationAnswer(request, answer);
    },
    terminalChanged: (terminalId) => record.terminalChanged(terminalId),
  };
}

/** What the turn adds to the session: its events, and its tool calls and reply for the history. */
class TurnRecord {
  private text = '';
  private readonly open = new Map<string, OpenToolCall>();
  /** Calls already completed: a late repeat of one is not a new call. */
  private readonly done = new Set<string>();
  /** Updates are applied one after another: an image in one is stored before the next is looked at. */
  private applying: Promise<void> = Promise.resolve();
  /** The guest's images and audio as stored, by the block that carried them. */
  private readonly kept = new Map<AcpBlock, StoredBlock>();
  /** The reply's blocks (since the last tool call), kept as parts when one is more than text. */
  private replyBlocks: StoredBlock[] = [];
  private readonly sources: PartSources;
  /** What the guest last said the turn spent: its prompt response's usage wins over a usage_update. */
  usage: GuestUsage | undefined;
  appended = 0;

  constructor(
    private readonly turn: TurnContext,
    terminal: PartSources['terminal'],
  ) {
    this.sources = { terminal, kept: (block) => this.kept.get(block) ?? null };
  }

  update(update: SessionUpdate): void {
    // One update that fails to apply (a store that refused an image) must not stop the ones after it.
    this.applying = this.applying.then(() => this.apply(update)).catch((err: unknown) => this.turn.emit({ type: 'error', message: `an update of the guest was not applied: ${(err as Error).message}` }));
  }

  /** Resolves once every update received so far is applied. */
  settled(): Promise<void> {
    return this.applying;
  }

  /** The reply's parts, when it held an image or audio. */
  replyParts(): { parts?: MessagePart[] } {
    return this.replyBlocks.some((block) => block.type !== 'text') ? { parts: this.replyBlocks } : {};
  }

  private async apply(update: SessionUpdate): Promise<void> {
    await this.keepMedia(update);
    if (update.sessionUpdate === 'agent_message_chunk') {
      const kept = this.kept.get(update.content);
      if (kept !== undefined) return this.replyMedia(kept);
    }
    switch (update.sessionUpdate) {
      case 'tool_call':
      case 'tool_call_update':
        this.toolUpdate(update.toolCallId, update);
        return;
      case 'usage_update':
        this.reported(contextUsage(update.used));
        return;
    }
    const event = updateEvent(update);
    if (event === null) return;
    if (event.type === 'message.delta') this.replyText(event.text);
    this.turn.emit(event);
  }

  /** The images and audio an update carries, stored as blobs of the session; one that cannot be is said in place of it. */
  private async keepMedia(update: SessionUpdate): Promise<void> {
    for (const block of mediaBlocks(update)) {
      try {
        const bytes = decodeBytes(block.data, 'the guest\'s block', DEFAULT_CONTENT_BOUNDS);
        const contradicted = contradiction(block.mimeType, bytes);
        if (contradicted !== null) throw new Error(contradicted);
        this.kept.set(block, await this.turn.keepBlob(block.type, block.mimeType, bytes));
      } catch (err) {
        this.kept.set(block, { type: 'text', text: `[${block.type} not kept: ${(err as Error).message}]` });
      }
    }
  }

  private replyText(text: string): void {
    this.text += text;
    const last = this.replyBlocks.at(-1);
    if (last?.type === 'text') last.text += text;
    else this.replyBlocks.push({ type: 'text', text });
  }

  /** An image in the reply: its text form streams as text; the block is kept as the reply's part. */
  private replyMedia(block: StoredBlock): void {
    const text = describeBlock(block);
    this.text += text;
    this.replyBlocks.push(block.type === 'text' ? { ...block } : block);
    this.turn.emit({ type: 'message.delta', text });
  }

  /** The turn's usage as the guest reported it: kept by the host as it goes, so a failed turn keeps it. */
  reported(usage: GuestUsage | undefined): void {
    if (usage === undefined) return;
    this.usage = usage;
    this.turn.reportUsage(usage.usage, usage.model);
  }

  /** A permission request completed with what the turn knows of its call (its kind, its input), which is then announced. */
  toolCallAsked(request: RequestPermissionRequest): RequestPermissionRequest {
    const id = request.toolCall.toolCallId;
    const call = this.toolUpdate(id, request.toolCall);
    if (call === undefined) return request;
    if (!call.announced) this.announce(id, call);
    return { ...request, toolCall: { ...request.toolCall, kind: call.kind ?? null, title: call.title ?? null, rawInput: call.rawInput } };
  }

  /** A terminal wrote: each open call that shows it is brought up to date, no more often than TERMINAL_UPDATE_MS. */
  terminalChanged(terminalId: string): void {
    for (const [id, call] of this.open) {
      if (!call.announced || call.updateTimer !== null || !call.content.some((c) => c.type === 'terminal' && c.terminalId === terminalId)) continue;
      const wait = Math.max(0, call.updatedAt + TERMINAL_UPDATE_MS - Date.now());
      call.updateTimer = setTimeout(() => {
        call.updateTimer = null;
        if (this.open.get(id) === call) this.sendUpdate(id, call, toolParts(call.content, this.sources));
      }, wait);
    }
  }

  /** The reply: what the guest wrote after its last tool call. Calls without a result are kept as such. */
  finish(): string {
    for (const id of [...this.open.keys()]) this.completeTool(id, false, '(no result: the turn ended first)', false);
    return this.text;
  }

  /**
   * A tool call's news: its first sight opens it; later ones (the same call sent again with its
   * input, an update) fill in its kind, title and input; a final status completes it.
   */
  private toolUpdate(id: string, news: ToolCallNews): OpenToolCall | undefined {
    let call = this.open.get(id);
    if (call === undefined) {
      if (this.done.has(id)) return undefined;
      call = { kind: null, title: null, rawInput: undefined, textBefore: this.text, announced: false, span: startTool(this.turn.trace, toolName(news.kind), id), content: [], updateTimer: null, updatedAt: 0 };
      this.text = '';
      this.replyBlocks = [];
      this.open.set(id, call);
    }
    if (news.kind) call.kind = news.kind;
    if (news.title) call.title = news.title;
    if (hasInput(news.rawInput)) call.rawInput = news.rawInput;
    const final = news.status === 'completed' || news.status === 'failed';
    if (!call.announced && (hasInput(call.rawInput) || final || news.status === 'in_progress')) this.announce(id, call);
    // ACP: an update's content replaces the call's; an update without content leaves it (Claude
    // Code's adapter completes a terminal's call with its output as rawOutput alone).
    if (news.content) call.content = news.content;
    const parts = toolParts(final ? call.content : news.content, this.sources);
    if (final) this.completeTool(id, news.status === 'completed', toolResultText(news.content, news.rawOutput), true, parts);
    else if (parts.length > 0 && call.announced) this.sendUpdate(id, call, parts);
    return call;
  }

  private sendUpdate(id: string, call: OpenToolCall, parts: MessagePart[]): void {
    call.updatedAt = Date.now();
    this.turn.emit({ type: 'tool.update', id, content: parts });
  }

  private announce(id: string, call: OpenToolCall): void {
    call.announced = true;
    this.turn.emit({ type: 'tool.start', id, name: toolName(call.kind), arguments: argumentsText(call.rawInput), ...(call.title ? { title: call.title } : {}) });
  }

  private completeTool(id: string, ok: boolean, result: string, announce = true, parts: MessagePart[] = []): void {
    const call = this.open.get(id);
    if (call === undefined) return;
    if (call.updateTimer !== null) clearTimeout(call.updateTimer);
    this.open.delete(id);
    this.done.add(id);
    if (announce) {
      if (!call.announced) this.announce(id, call);
      this.turn.emit({ type: 'tool.complete', id, ok, summary: result, ...(parts.length === 0 ? {} : { content: parts }) });
    }
    const name = toolName(call.kind);
    nameTool(call.span, this.turn.trace, name, argumentsText(call.rawInput));
    endTool(call.span, this.turn.trace, ok, result);
    this.turn.append({ role: 'assistant', content: call.textBefore, tool_calls: [{ id, type: 'function', function: { name, arguments: argumentsText(call.rawInput) } }] });
    this.turn.append({ role: 'tool', tool_call_id: id, content: result, ...(parts.length === 0 ? {} : { parts }) });
    this.appended += 2;
  }
}

/** What a tool_call, a tool_call_update or a permission request's call may say of a call. */
interface ToolCallNews {
  kind?: ToolKind | null;
  title?: string | null;
  status?: string | null;
  rawInput?: unknown;
  rawOutput?: unknown;
  content?: ToolCallContent[] | null;
}

/** A guest that sends a call before its input sends `{}` (or nothing) first. */
function hasInput(rawInput: unknown): boolean {
  if (rawInput === undefined || rawInput === null) return false;
  return typeof rawInput !== 'object' || Object.keys(rawInput).length > 0;
}

/** The images and audio an update carries with their bytes: a reply's chunk, a tool call's content. */
function mediaBlocks(update: SessionUpdate): Extract<AcpBlock, { type: 'image' | 'audio' }>[] {
  const blocks: AcpBlock[] = [];
  if (update.sessionUpdate === 'agent_message_chunk') blocks.push(update.content);
  if ((update.sessionUpdate === 'tool_call' || update.sessionUpdate === 'tool_call_update') && update.content) {
    for (const item of update.content) if (item.type === 'content') blocks.push(item.content);
  }
  return blocks.filter((block): block is Extract<AcpBlock, { type: 'image' | 'audio' }> => block.type === 'image' || block.type === 'audio');
}
