// What an agent sees of its turn, and how its promise reports back to the session actor.
import { createHash } from 'node:crypto';
import type { AgentEvent, TurnContext, TurnResult, TurnUsage } from '../../agents/agent.js';
import type { AgentCatalogue } from '../../agents/catalogue.js';
import { UNTRACED } from '../../agents/genai-spans.js';
import { sanitizeMessage, type ChatMessage } from '../../protocol/chat.js';
import { blobHex, checkedParts, type ContentBlock, type MessagePart } from '../../protocol/content.js';
import { rpcEvent, type PlanEntry, type RpcEvent, type ServerRequestMethod } from '../../protocol/rpc.js';
import type { SessionMsg } from './messages.js';
import { ask, tell, SECOND_MS, type Ref } from '../runtime.js';
import type { HostServices } from './services.js';
import { OWNER } from '../../persistence/people.js';
import type { RunningTurn } from './session-state.js';

/** The ask query outlives the request's own timeout by this much, so the request always answers first. */
const ASK_MARGIN_MS = 5 * SECOND_MS;
/** One commit of the session's history; far longer than any healthy commit takes. */
const COMMIT_TIMEOUT_MS = 30 * SECOND_MS;
/** tool.start carries the arguments, cut here (AGENT.md §3). */
const TOOL_ARGUMENTS_MAX = 2048;
/** tool.complete carries the first characters of the result. */
const TOOL_SUMMARY_MAX = 200;
/** A guest's tool title (AGENT.md §6) is a line for a person, not a payload. */
const TOOL_TITLE_MAX = 500;
/** A plan longer than this is cut: a status.update stays one small frame. */
const PLAN_ENTRIES_MAX = 100;

export interface TurnSpec {
  sid: string;
  prompt: string;
  content: readonly ContentBlock[];
  /** The session's messages before the prompt, as the agent sees them. */
  history: readonly ChatMessage[];
  overrides: TurnContext['overrides'];
  cwd: string | null;
  agentSessionId: string | null;
}

export function buildTurnContext(spec: TurnSpec, turn: RunningTurn, services: HostServices, self: Ref<SessionMsg>): TurnContext {
  const { writer, clock } = services;
  return {
    sid: spec.sid,
    turnId: turn.turnId,
    prompt: spec.prompt,
    content: spec.content,
    async blob(ref: string): Promise<Buffer> {
      const hex = blobHex(ref);
      const bytes = (await services.store.homes.contents([hex])).get(hex);
      if (bytes === undefined) throw new Error(`the store holds no blob ${ref}`);
      return bytes;
    },
    async keepBlob(type: 'image' | 'audio', mimeType: string, bytes: Buffer): Promise<ContentBlock> {
      const sha256 = createHash('sha256').update(bytes).digest('hex');
      await services.store.blobs.keep(spec.sid, { sha256, mimeType, size: bytes.length, name: null }, bytes);
      return { type, mimeType, blob: `sha256:${sha256}`, size: bytes.length };
    },
    history: spec.history,
    overrides: spec.overrides,
    cwd: spec.cwd,
    agentSessionId: spec.agentSessionId,
    signal: turn.controller.signal,
    trace: turn.span?.trace ?? UNTRACED,
    emit(event: AgentEvent): void {
      if (turn.finished) return;
      const message = toRpcEvent(spec.sid, event);
      if (message === undefined) return;
      turn.lastEventNs = clock.hostNs();
      writer.write({ type: 'rpc', sid: spec.sid, message });
    },
    append(message: ChatMessage): void {
      if (turn.finished) return;
      turn.pending.push(sanitizeMessage(message));
    },
    async save(): Promise<void> {
      if (turn.finished) return;
      const failure = await ask(self, (replyTo: Ref<string | null>): SessionMsg => ({ kind: 'save-tail', turnId: turn.turnId, replyTo }), COMMIT_TIMEOUT_MS);
      if (failure !== null) throw new Error(failure);
    },
    reportUsage(usage: TurnUsage, model?: string): void {
      if (turn.finished) return;
      const checked = checkedUsage(usage);
      if (checked !== undefined) turn.report = { ...turn.report, usage: checked };
      if (typeof model === 'string') turn.report = { ...turn.report, model };
    },
    async keepAgentSession(agentSessionId: string): Promise<void> {
      if (turn.finished) throw new Error('the turn has ended');
      const failure = await ask(
        self,
        (replyTo: Ref<string | null>): SessionMsg => ({ kind: 'keep-agent-session', turnId: turn.turnId, agentSessionId: String(agentSessionId), replyTo }),
        COMMIT_TIMEOUT_MS,
      );
      if (failure !== null) throw new Error(failure);
    },
    async workspace() {
      const stored = await services.store.sessionWorkspace(spec.sid);
      return { person: stored.owner ?? OWNER, flat: stored.flat };
    },
    async forkOrigin() {
      const origin = await services.store.forkOrigin(spec.sid);
      return origin === null ? null : { sid: origin.sid, agentSessionId: origin.agent_session_id };
    },
    async compressHistory(summary: ChatMessage[]): Promise<void> {
      if (turn.finished) throw new Error('the turn has ended');
      const clean = summary.map(sanitizeMessage);
      const failure = await ask(
        self,
        (replyTo: Ref<string | null>): SessionMsg => ({ kind: 'compress-history', turnId: turn.turnId, summary: clean, replyTo }),
        COMMIT_TIMEOUT_MS,
      );
      if (failure !== null) throw new Error(failure);
    },
    takeSteering(): string[] {
      if (turn.finished) return [];
      return turn.steering.take().map((item) => {
        turn.pending.push({ role: 'user', content: item.text });
        return item.text;
      });
    },
    steeringArrival(ms: number): Promise<void> {
      return turn.steering.arrival(ms, turn.controller.signal);
    },
    async ask(method: ServerRequestMethod, params: Record<string, unknown>, options = {}): Promise<unknown> {
      if (turn.finished || turn.controller.signal.aborted) return null;
      const timeoutMs = options.timeoutMs ?? services.requestTimeoutMs;
      try {
        return await ask(
          self,
          (replyTo: Ref<unknown>): SessionMsg => ({ kind: 'open-request', method, params, timeoutMs, turnId: turn.turnId, replyTo }),
          timeoutMs + ASK_MARGIN_MS,
        );
      } catch {
        return null;
      }
    },
  };
}

/** Agents are user code: only the documented event shapes reach the wire. */
function toRpcEvent(sid: string, event: AgentEvent): RpcEvent | undefined {
  switch (event.type) {
    case 'message.delta':
      return rpcEvent(sid, 'message.delta', { text: String(event.text) });
    case 'reasoning.delta':
      return rpcEvent(sid, 'reasoning.delta', { text: String(event.text) });
    case 'tool.start':
      return rpcEvent(sid, 'tool.start', {
        id: String(event.id),
        name: String(event.name),
        ...(event.arguments === undefined ? {} : { arguments: String(event.arguments).slice(0, TOOL_ARGUMENTS_MAX) }),
        ...(event.title === undefined ? {} : { title: String(event.title).slice(0, TOOL_TITLE_MAX) }),
      });
    case 'tool.complete':
      return rpcEvent(sid, 'tool.complete', {
        id: String(event.id),
        ok: event.ok === true,
        ...(event.summary === undefined ? {} : { summary: String(event.summary).slice(0, TOOL_SUMMARY_MAX) }),
        ...partsOf(event.content),
      });
    case 'tool.update': {
      const content = checkedParts(event.content);
      return content.length === 0 ? undefined : rpcEvent(sid, 'tool.update', { id: String(event.id), content });
    }
    case 'status.update':
      return rpcEvent(sid, 'status.update', {
        kind: String(event.kind),
        text: String(event.text),
        ...(Array.isArray(event.entries) ? { entries: event.entries.slice(0, PLAN_ENTRIES_MAX).map(planEntry) } : {}),
      });
    case 'error':
      return rpcEvent(sid, 'error', { message: String(event.message) });
    default:
      return undefined;
  }
}

/** An event's content, checked (agents are user code); nothing when it has none. */
function partsOf(content: unknown): { content?: MessagePart[] } {
  const parts = content === undefined ? [] : checkedParts(content);
  return parts.length === 0 ? {} : { content: parts };
}

function planEntry(entry: PlanEntry): PlanEntry {
  return { content: String(entry?.content ?? '').slice(0, TOOL_TITLE_MAX), status: String(entry?.status ?? ''), priority: String(entry?.priority ?? '') };
}

const isCount = (n: unknown): n is number => Number.isSafeInteger(n) && (n as number) >= 0;

/** Usage only with the documented counts; the optional ones (cached, reasoning) only when they are counts. */
function checkedUsage(u: TurnUsage | undefined): TurnUsage | undefined {
  if (!u || !isCount(u.prompt_tokens) || !isCount(u.completion_tokens) || !isCount(u.calls)) return undefined;
  return {
    prompt_tokens: u.prompt_tokens,
    completion_tokens: u.completion_tokens,
    calls: u.calls,
    ...(isCount(u.cached_tokens) ? { cached_tokens: u.cached_tokens } : {}),
    ...(isCount(u.reasoning_tokens) ? { reasoning_tokens: u.reasoning_tokens } : {}),
  };
}

/**
 * Runs the session's agent (`name` in the catalogue, made at its first use); its outcome comes back
 * to the session as a `turn-done` message. An agent the catalogue lacks fails the turn (reason `agent`).
 */
export function runAgent(agents: AgentCatalogue, name: string, context: TurnContext, self: Ref<SessionMsg>): void {
  const done = (result: TurnResult | null, error: Error | null): void =>
    tell(self, { kind: 'turn-done', turnId: context.turnId, result, error });
  const running = (async (): Promise<Partial<TurnResult> | undefined> => {
    const lease = await agents.lease(name);
    try {
      return await lease.agent.runTurn(context);
    } finally {
      lease.done();
    }
  })();
  running.then(
    (result) => done(checkedResult(result), null),
    (err: unknown) => done(null, err instanceof Error ? err : new Error(String(err))),
  );
}

/** Agents are user code: the reply becomes a string, usage only when it has the documented numbers. */
function checkedResult(result: Partial<TurnResult> | undefined): TurnResult {
  const reply = typeof result?.reply === 'string' ? result.reply : String(result?.reply ?? '');
  const checked: TurnResult = { reply };
  if (typeof result?.model === 'string') checked.model = result.model;
  const usage = checkedUsage(result?.usage);
  if (usage !== undefined) checked.usage = usage;
  if (result?.finishReason === 'length') checked.finishReason = 'length';
  if (result?.interrupted === true) checked.interrupted = true;
  const parts = checkedParts(result?.parts);
  if (parts.length > 0) checked.parts = parts;
  return checked;
}
