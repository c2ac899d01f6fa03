// The one file that speaks to the model server, through the official `openai` SDK (streaming
// Chat Completions). It adds what the SDK leaves to its user (reference/toolchain.md §8): a
// retry per attempt that the turn can report, an idle watchdog for a stream that stalls after
// its headers, errors sorted into the reasons of AGENT.md §4, and no key in any message.
import OpenAI, { APIConnectionError, APIError, APIUserAbortError } from 'openai';
import type { ToolCall } from '../../protocol/chat.js';
import { AgentFailure } from '../agent.js';
import { sleepUnlessAborted } from '../script.js';
import type { ApiMessage } from './history.js';
import { keyRedactor, type Redactor } from './key-redaction.js';
import { SseLineTooLong, SseReader } from './sse-reader.js';
import { ServerSaid, StreamedReply, type ReplyHandlers, type Usage } from './streamed-reply.js';

export interface ApiTool {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/** What a call sends besides its messages. */
interface CallSettings {
  model: string;
  tools: ApiTool[];
  temperature?: number | undefined;
  max_tokens?: number | undefined;
}

export interface ChatRequest extends CallSettings {
  messages: ApiMessage[];
}

export interface StreamRequest extends CallSettings {
  /** The messages as a JSON array in UTF-8 pieces, mostly kept between a session's calls (api-history.ts): sent as they are. */
  messagesJson: readonly Buffer[];
  /** The call's span as a W3C traceparent (PROTOCOL.md §5.8), sent to the server as the header. */
  traceparent?: string;
}

export interface StreamHandlers extends ReplyHandlers {
  /** Before each retry: which one, how long until it, and why. */
  retry(attempt: number, delayMs: number, why: string): void;
}

export interface ModelReply {
  content: string;
  toolCalls: ToolCall[];
  /** Null when the server sent no usage (or the stream was cut before it). */
  usage: Usage | null;
  /** How the server said the reply ended (`stop`, `tool_calls`, `length`); null when interrupted. */
  finishReason: string | null;
  /** The model that answered, as the server named it; null when it did not. */
  model: string | null;
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

/** A reply that failed after some of it was streamed: `seen` is what the user was shown. */
export class CutReply extends AgentFailure {
  constructor(
    failure: AgentFailure,
    readonly seen: string,
  ) {
    super(failure.reason, failure.message);
  }
}

const RETRY_BASE_MS = 500;
const RETRY_CAP_MS = 8000;
/** A server's retry-after is honoured up to this; past it, the turn would look hung. */
const RETRY_AFTER_CAP_MS = 60_000;
const CONTEXT_LENGTH = /context.{0,20}(length|window)|maximum context|too many tokens|prompt is too long|reduce the length/i;

export class ModelApi {
  private readonly client: OpenAI;
  /** A server may echo the key (or part of it, in any case) in an error: it never leaves this file. */
  private readonly redactKey: Redactor;

  /** The server, as a model call's span names it (PROTOCOL.md §5.8). */
  readonly server: URL;

  constructor(private readonly endpoint: Endpoint) {
    this.server = new URL(endpoint.baseUrl);
    this.redactKey = keyRedactor(endpoint.apiKey);
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

  /**
   * One streamed model call; resolves with the reply, or `aborted` (with what had arrived) when the
   * signal fired. The SDK sends the request and sorts HTTP errors; the body is read here, because
   * servers bend its shape in ways the SDK's reader fails on (AGENT.md §4).
   */
  async stream(request: StreamRequest, signal: AbortSignal, handlers: StreamHandlers): Promise<ModelReply> {
    const reply = new StreamedReply(handlers);
    const call = new AbortController();
    const abortCall = (): void => call.abort();
    signal.addEventListener('abort', abortCall, { once: true });
    // Any byte (a ping too) is traffic; pings alone may hold a response no longer than a request may take.
    const idle = new Watchdog(this.endpoint.idleTimeoutMs, abortCall);
    const pingsOnly = new Watchdog(this.endpoint.requestTimeoutMs, abortCall);
    const aborted = (): ModelReply => ({ content: reply.content, toolCalls: [], usage: reply.usage, finishReason: null, model: reply.model, aborted: true });
    try {
      // The SDK's own `chat.completions.create` is this post with the body as an object, which it
      // would serialize whole on every call: a body given as bytes goes as it is.
      const response = await this.withRetries(signal, handlers, () =>
        this.client.post('/chat/completions', { body: streamingBody(request), headers: headersOf(request), stream: true, signal: call.signal }).asResponse(),
      );
      if (response === null) return aborted();
      idle.reset();
      pingsOnly.reset();
      await readReply(response, reply, () => idle.reset(), () => pingsOnly.reset());
      if (signal.aborted) return aborted();
      this.throwIfStalled(idle, pingsOnly);
      if (!reply.complete) throw new ServerSaid('the stream ended before the reply was complete');
      return {
        content: reply.content,
        // A reply cut by the token limit may have cut a call's arguments too: no call of it runs.
        toolCalls: reply.finishReason === 'length' ? [] : reply.toolCalls.finish(`call-${Date.now().toString(36)}`),
        usage: reply.usage,
        finishReason: reply.finishReason,
        model: reply.model,
        aborted: false,
      };
    } catch (err) {
      if (signal.aborted) return aborted();
      this.throwIfStalled(idle, pingsOnly, reply.content);
      const failure = err instanceof AgentFailure ? err : err instanceof ServerSaid ? this.serverSaid(err.message) : this.failure(err, 'the response stream broke');
      throw reply.content === '' ? failure : new CutReply(failure, reply.content);
    } finally {
      idle.stop();
      pingsOnly.stop();
      signal.removeEventListener('abort', abortCall);
    }
  }

  private throwIfStalled(idle: Watchdog, pingsOnly: Watchdog, seen = ''): void {
    const { baseUrl, idleTimeoutMs, requestTimeoutMs } = this.endpoint;
    let failure: AgentFailure | null = null;
    if (idle.fired) failure = new AgentFailure('stalled', `${baseUrl} sent nothing for ${idleTimeoutMs / 1000} s in the middle of a response`);
    if (pingsOnly.fired) failure = new AgentFailure('stalled', `${baseUrl} sent only keep-alive pings for ${requestTimeoutMs / 1000} s`);
    if (failure !== null) throw seen === '' ? failure : new CutReply(failure, seen);
  }

  private serverSaid(message: string): AgentFailure {
    return new AgentFailure('upstream', `${this.endpoint.baseUrl}: ${this.redactKey(message)}`);
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
    return new AgentFailure('upstream', err instanceof APIError || err instanceof APIConnectionError ? text : `${context} at ${baseUrl}: ${this.redactKey(String((err as Error)?.message ?? err))}`);
  }

  private describe(err: unknown): string {
    const { baseUrl } = this.endpoint;
    if (err instanceof APIConnectionError) return `could not reach ${baseUrl}: ${this.redactKey(err.message)}`;
    if (err instanceof APIError && err.status !== undefined) return `${baseUrl} answered ${err.status}: ${this.redactKey(err.message)}`;
    if (err instanceof APIError) return `${baseUrl} sent an error in the stream: ${this.redactKey(err.message)}`;
    return `${baseUrl}: ${this.redactKey(String((err as Error)?.message ?? err))}`;
  }

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

/** Fires when not reset for `ms` (the SDK's own timeout ends with the headers). */
class Watchdog {
  fired = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly ms: number,
    private readonly onSilence: () => void,
  ) {}

  /** Once per chunk: refreshing one timer is far cheaper than a new one each time. */
  reset(): void {
    if (this.timer !== undefined) {
      this.timer.refresh();
      return;
    }
    this.timer = setTimeout(() => {
      this.fired = true;
      this.onSilence();
    }, this.ms);
  }

  stop(): void {
    clearTimeout(this.timer);
  }
}

const JSON_TYPE = { 'content-type': 'application/json' };

function headersOf(request: StreamRequest): Record<string, string> {
  return request.traceparent === undefined ? JSON_TYPE : { ...JSON_TYPE, traceparent: request.traceparent };
}

/** A streamed call's body as UTF-8 JSON: the messages' bytes copied in once, the rest serialized. */
function streamingBody(request: StreamRequest): Buffer {
  const settings: Omit<OpenAI.ChatCompletionCreateParamsStreaming, 'messages'> = {
    model: request.model,
    ...(request.tools.length > 0 ? { tools: request.tools } : {}),
    ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
    ...(request.max_tokens === undefined ? {} : { max_tokens: request.max_tokens }),
    stream: true,
    stream_options: { include_usage: true },
  };
  return Buffer.concat([Buffer.from('{"messages":'), ...request.messagesJson, Buffer.from(`,${JSON.stringify(settings).slice(1)}`)]);
}

/** The largest JSON body read where a stream was asked for. */
const JSON_BODY_MAX_BYTES = 16 * 1024 * 1024;

/**
 * Reads the body into the reply: an event stream item by item, or a whole JSON body. `onTraffic`
 * runs for every chunk of bytes, `onData` for every item that is more than a comment.
 */
async function readReply(response: Response, reply: StreamedReply, onTraffic: () => void, onData: () => void): Promise<void> {
  if (response.body === null) return;
  if (/\bapplication\/json\b/i.test(response.headers.get('content-type') ?? '')) {
    reply.takeBody(await readWhole(response.body, onTraffic));
    return;
  }
  const sse = new SseReader();
  try {
    for await (const chunk of response.body) {
      onTraffic();
      for (const item of sse.push(chunk)) {
        onData();
        reply.take(item);
        if (reply.done) return;
      }
    }
  } catch (err) {
    if (err instanceof ServerSaid || err instanceof SseLineTooLong || isAbort(err)) throw err;
    throw new ServerSaid(`the stream ended before the reply was complete (${(err as Error).message})`);
  }
  for (const item of sse.end()) reply.take(item);
}

function isAbort(err: unknown): boolean {
  return err instanceof Error && err.name === 'AbortError';
}

async function readWhole(body: ReadableStream<Uint8Array>, onTraffic: () => void): Promise<string> {
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  for await (const chunk of body) {
    onTraffic();
    bytes += chunk.byteLength;
    if (bytes > JSON_BODY_MAX_BYTES) throw new ServerSaid(`the server's JSON answer is larger than ${JSON_BODY_MAX_BYTES / 1024 / 1024} MiB`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
