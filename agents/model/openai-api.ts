// The one file that speaks to the model server, through the official `openai` SDK (streaming
// Chat Completions). It adds what the SDK leaves to its user (reference/toolchain.md §8): a
// retry per attempt that the turn can report, an idle watchdog for a stream that stalls after
// its headers, errors sorted into the reasons of AGENT.md §4, and no key in any message.
import OpenAI, { APIConnectionError, APIError, APIUserAbortError } from 'openai';
import type { ToolCall } from '../../protocol/chat.js';
import { AgentFailure } from '../agent.js';
import { sleepUnlessAborted } from '../script.js';
import type { ApiMessage } from './history.js';
import { ToolCallStream } from './tool-call-stream.js';

export interface ApiTool {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

export interface ChatRequest {
  model: string;
  messages: ApiMessage[];
  tools: ApiTool[];
  temperature?: number | undefined;
  max_tokens?: number | undefined;
}

export interface StreamHandlers {
  content(text: string): void;
  reasoning(text: string): void;
  /** Before each retry: which one, how long until it, and why. */
  retry(attempt: number, delayMs: number, why: string): void;
}

export interface ModelReply {
  content: string;
  toolCalls: ToolCall[];
  /** Null when the server sent no usage (or the stream was cut before it). */
  usage: { prompt_tokens: number; completion_tokens: number } | null;
  /** The turn was interrupted: `content` holds what had arrived. */
  aborted: boolean;
}

export interface Endpoint {
  baseUrl: string;
  apiKey: string | undefined;
  apiKeyEnv: string;
  requestTimeoutMs: number;
  idleTimeoutMs: number;
  maxRetries: number;
}

/** A 400 that says the prompt is longer than the model's context: the turn compresses and retries once. */
export class ContextTooLong extends AgentFailure {}

const RETRY_BASE_MS = 500;
const RETRY_CAP_MS = 8000;
/** A server's retry-after is honoured up to this; past it, the turn would look hung. */
const RETRY_AFTER_CAP_MS = 60_000;
const CONTEXT_LENGTH = /context.{0,20}(length|window)|maximum context|too many tokens|prompt is too long|reduce the length/i;

export class ModelApi {
  private readonly client: OpenAI;

  constructor(private readonly endpoint: Endpoint) {
    this.client = new OpenAI({
      baseURL: endpoint.baseUrl,
      // The SDK insists on a key; with none, a placeholder is set and the header left out, for
      // local servers. Every other credential it would read from the environment is cleared.
      apiKey: endpoint.apiKey ?? 'unset',
      ...(endpoint.apiKey === undefined ? { defaultHeaders: { Authorization: null } } : {}),
      adminAPIKey: null,
      organization: null,
      project: null,
      maxRetries: 0,
      timeout: endpoint.requestTimeoutMs,
    });
  }

  /** One streamed model call; resolves with the reply, or `aborted` when the signal fired. */
  async stream(request: ChatRequest, signal: AbortSignal, handlers: StreamHandlers): Promise<ModelReply> {
    const reply: ModelReply = { content: '', toolCalls: [], usage: null, aborted: false };
    const call = new AbortController();
    const abortCall = (): void => call.abort();
    signal.addEventListener('abort', abortCall, { once: true });
    const watchdog = new IdleWatchdog(this.endpoint.idleTimeoutMs, abortCall);
    try {
      const stream = await this.withRetries(signal, handlers, () =>
        this.client.chat.completions.create(
          {
            model: request.model,
            messages: request.messages as OpenAI.ChatCompletionMessageParam[],
            ...(request.tools.length > 0 ? { tools: request.tools } : {}),
            ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
            ...(request.max_tokens === undefined ? {} : { max_tokens: request.max_tokens }),
            stream: true,
            stream_options: { include_usage: true },
          },
          { signal: call.signal },
        ),
      );
      if (stream === null) return { ...reply, aborted: true };
      const toolCalls = new ToolCallStream();
      watchdog.start();
      for await (const chunk of stream) {
        watchdog.reset();
        if (chunk.usage) reply.usage = { prompt_tokens: chunk.usage.prompt_tokens ?? 0, completion_tokens: chunk.usage.completion_tokens ?? 0 };
        const delta = chunk.choices[0]?.delta;
        if (delta === undefined) continue;
        if (delta.content) {
          reply.content += delta.content;
          handlers.content(delta.content);
        }
        const reasoning = reasoningText(delta as Record<string, unknown>);
        if (reasoning) handlers.reasoning(reasoning);
        for (const fragment of delta.tool_calls ?? []) toolCalls.add(fragment);
      }
      // After the stream has started, an abort ends the iteration silently.
      if (signal.aborted) return { ...reply, aborted: true };
      if (watchdog.fired) throw this.stalled();
      reply.toolCalls = toolCalls.finish(`call-${Date.now().toString(36)}`);
      return reply;
    } catch (err) {
      if (signal.aborted) return { ...reply, aborted: true };
      if (watchdog.fired) throw this.stalled();
      throw err instanceof AgentFailure ? err : this.failure(err, 'the response stream broke');
    } finally {
      watchdog.stop();
      signal.removeEventListener('abort', abortCall);
    }
  }

  /** One non-streamed call (a compression's summary); null when the signal fired. */
  async complete(request: ChatRequest, signal: AbortSignal): Promise<string | null> {
    try {
      const completion = await this.withRetries(signal, null, () =>
        this.client.chat.completions.create({ model: request.model, messages: request.messages as OpenAI.ChatCompletionMessageParam[], stream: false }, { signal }),
      );
      return completion === null ? null : (completion.choices[0]?.message.content ?? '');
    } catch (err) {
      if (signal.aborted) return null;
      throw err instanceof AgentFailure ? err : this.failure(err, 'the request failed');
    }
  }

  /** Retries 408/409/429/5xx and connection failures before a response arrives; null when aborted. */
  private async withRetries<T>(signal: AbortSignal, handlers: StreamHandlers | null, attempt: () => Promise<T>): Promise<T | null> {
    for (let retries = 0; ; retries++) {
      try {
        return await attempt();
      } catch (err) {
        if (signal.aborted || err instanceof APIUserAbortError) return null;
        if (!isRetryable(err)) throw this.failure(err, 'the request failed');
        if (retries >= this.endpoint.maxRetries) throw this.failure(err, 'the request failed', retries);
        const delayMs = retryDelayMs(retries, err);
        handlers?.retry(retries + 1, delayMs, this.describe(err));
        if (!(await sleepUnlessAborted(delayMs, signal))) return null;
      }
    }
  }

  private failure(err: unknown, context: string, retries = 0): AgentFailure {
    const { baseUrl, apiKeyEnv } = this.endpoint;
    if (err instanceof APIError && (err.status === 401 || err.status === 403)) {
      return new AgentFailure('auth', `authentication failed at ${baseUrl} (${err.status}): check $${apiKeyEnv}`);
    }
    const after = retries > 0 ? ` (after ${retries} ${retries === 1 ? 'retry' : 'retries'})` : '';
    const text = `${this.describe(err)}${after}`;
    if (err instanceof APIError && err.status === 400 && CONTEXT_LENGTH.test(`${err.code ?? ''} ${err.message}`)) {
      return new ContextTooLong('upstream', text);
    }
    return new AgentFailure('upstream', err instanceof APIError || err instanceof APIConnectionError ? text : `${context} at ${baseUrl}: ${this.redact(String((err as Error)?.message ?? err))}`);
  }

  private describe(err: unknown): string {
    const { baseUrl } = this.endpoint;
    if (err instanceof APIConnectionError) return `could not reach ${baseUrl}: ${this.redact(err.message)}`;
    if (err instanceof APIError && err.status !== undefined) return `${baseUrl} answered ${err.status}: ${this.redact(err.message)}`;
    if (err instanceof APIError) return `${baseUrl} sent an error in the stream: ${this.redact(err.message)}`;
    return `${baseUrl}: ${this.redact(String((err as Error)?.message ?? err))}`;
  }

  private stalled(): AgentFailure {
    return new AgentFailure('stalled', `${this.endpoint.baseUrl} sent nothing for ${this.endpoint.idleTimeoutMs / 1000} s in the middle of a response`);
  }

  /** A server may echo the key (or part of it) in an error; it never leaves this file. */
  private redact(text: string): string {
    const key = this.endpoint.apiKey;
    return key && key.length >= 4 ? text.split(key).join('[key]') : text;
  }
}

function reasoningText(delta: Record<string, unknown>): string {
  const text = delta['reasoning_content'] ?? delta['reasoning'];
  return typeof text === 'string' ? text : '';
}

function isRetryable(err: unknown): boolean {
  if (err instanceof APIConnectionError) return true;
  if (!(err instanceof APIError) || err.status === undefined) return false;
  return err.status === 408 || err.status === 409 || err.status === 429 || err.status >= 500;
}

/** 0.5 s doubling to 8 s with jitter, or what the server asked for in retry-after(-ms). */
function retryDelayMs(retries: number, err: unknown): number {
  const asked = err instanceof APIError ? retryAfterMs(err.headers) : undefined;
  if (asked !== undefined) return Math.min(asked, RETRY_AFTER_CAP_MS);
  const base = Math.min(RETRY_CAP_MS, RETRY_BASE_MS * 2 ** retries);
  return Math.round(base * (1 - Math.random() * 0.25));
}

function retryAfterMs(headers: Headers | undefined): number | undefined {
  const ms = Number(headers?.get('retry-after-ms'));
  if (headers?.get('retry-after-ms') && Number.isFinite(ms) && ms >= 0) return ms;
  const text = headers?.get('retry-after');
  if (!text) return undefined;
  const seconds = Number(text);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** Fires when the stream is silent for `ms`: the SDK's timeout ends with the headers. */
class IdleWatchdog {
  fired = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly ms: number,
    private readonly onIdle: () => void,
  ) {}

  start(): void {
    this.reset();
  }

  /** Once per chunk: refreshing one timer is far cheaper than a new one each time. */
  reset(): void {
    if (this.timer !== undefined) {
      this.timer.refresh();
      return;
    }
    this.timer = setTimeout(() => {
      this.fired = true;
      this.onIdle();
    }, this.ms);
  }

  stop(): void {
    clearTimeout(this.timer);
  }
}
