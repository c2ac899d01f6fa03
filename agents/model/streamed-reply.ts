// One model reply put together from what the server sent (AGENT.md §4): chunks as OpenAI shapes
// them and as other servers bend that shape, a whole `chat.completion` body where a stream was
// asked for, and errors in every framing. This is where the server's JSON is checked: past it,
// the reply is typed. What the server says is wrong ends the reply with its own message.
import { ToolCallStream, type ToolCallFragment } from './tool-call-stream.js';
import type { SseItem } from './sse-reader.js';
import { isRecord, type UnknownRecord } from '../../protocol/fields.js';

export type Usage = { prompt_tokens: number; completion_tokens: number; cached_tokens?: number; reasoning_tokens?: number };

/** The server said something went wrong, or sent what cannot be read: the message says which. */
export class ServerSaid extends Error {}

export interface ReplyHandlers {
  content(text: string): void;
  reasoning(text: string): void;
}

const QUOTED_MAX = 200;

type Json = UnknownRecord;

export class StreamedReply {
  content = '';
  usage: Usage | null = null;
  finishReason: string | null = null;
  /** The model that answered, as the server named it. */
  model: string | null = null;
  readonly toolCalls = new ToolCallStream();
  /** `[DONE]` arrived (or the whole body did): nothing more is to be read. */
  done = false;

  constructor(private readonly handlers: ReplyHandlers) {}

  /** The reply is whole: the server said how it finished, or said `[DONE]`. */
  get complete(): boolean {
    return this.done || this.finishReason !== null;
  }

  take(item: SseItem): void {
    if (item.kind === 'field') {
      if (item.name === 'error') throw new ServerSaid(serverMessage(parseOr(item.value)));
      return;
    }
    if (item.kind === 'bare') {
      const body = parseOr(item.line);
      if (isRecord(body) && 'error' in body) throw new ServerSaid(serverMessage(body));
      return;
    }
    if (item.event === 'error') throw new ServerSaid(serverMessage(parseOr(item.data)));
    if (item.data.trim() === '[DONE]') {
      this.done = true;
      return;
    }
    const chunk = parseOr(item.data, undefined);
    if (!isRecord(chunk)) throw new ServerSaid(`the stream sent a chunk that is not a JSON object: ${quote(item.data)}`);
    if ('error' in chunk && chunk['error'] !== null) throw new ServerSaid(serverMessage(chunk));
    this.takeUsage(chunk['usage']);
    if (typeof chunk['model'] === 'string') this.model = chunk['model'];
    const choice = firstChoice(chunk);
    if (choice === null) return;
    const delta = choice['delta'] ?? choice['message'];
    if (isRecord(delta)) this.takeDelta(delta, false);
    this.takeFinish(choice['finish_reason']);
  }

  /** A whole `chat.completion`, as a server that ignores `stream: true` answers. */
  takeBody(text: string): void {
    const parsed = parseOr(text, undefined);
    const body = isRecord(parsed) ? parsed : {};
    if ('error' in body) throw new ServerSaid(serverMessage(body));
    const choice = firstChoice(body);
    if (choice === null || !isRecord(choice['message'])) {
      throw new ServerSaid(`the server answered the streaming request with JSON that is not a chat completion: ${quote(text)}`);
    }
    this.takeUsage(body['usage']);
    if (typeof body['model'] === 'string') this.model = body['model'];
    this.takeDelta(choice['message'], true);
    this.takeFinish(choice['finish_reason'] ?? 'stop');
    this.done = true;
  }

  private takeDelta(delta: Json, whole: boolean): void {
    const reasoning = delta['reasoning_content'] ?? delta['reasoning'];
    if (typeof reasoning === 'string' && reasoning !== '') this.handlers.reasoning(reasoning);
    const content = delta['content'];
    if (typeof content === 'string' && content !== '') {
      this.content += content;
      this.handlers.content(content);
    }
    const calls = delta['tool_calls'];
    if (!Array.isArray(calls)) return;
    calls.forEach((call, i) => {
      const fragment = toolCallFragment(call, whole ? i : undefined);
      if (fragment !== null) this.toolCalls.add(fragment);
    });
  }

  /** The API's usage, with its details where the server gives them (cached prompt tokens, reasoning tokens). */
  private takeUsage(usage: unknown): void {
    if (!isRecord(usage)) return;
    const cached = isRecord(usage['prompt_tokens_details']) ? usage['prompt_tokens_details']['cached_tokens'] : undefined;
    const reasoning = isRecord(usage['completion_tokens_details']) ? usage['completion_tokens_details']['reasoning_tokens'] : undefined;
    this.usage = {
      prompt_tokens: count(usage['prompt_tokens']),
      completion_tokens: count(usage['completion_tokens']),
      ...(typeof cached === 'number' ? { cached_tokens: count(cached) } : {}),
      ...(typeof reasoning === 'number' ? { reasoning_tokens: count(reasoning) } : {}),
    };
  }

  private takeFinish(reason: unknown): void {
    if (typeof reason === 'string' && reason !== '') this.finishReason = reason;
  }
}

function toolCallFragment(call: unknown, wholeIndex: number | undefined): ToolCallFragment | null {
  if (!isRecord(call)) return null;
  const fn = isRecord(call['function']) ? call['function'] : {};
  const args = fn['arguments'];
  return {
    index: wholeIndex ?? (typeof call['index'] === 'number' ? call['index'] : undefined),
    id: typeof call['id'] === 'string' ? call['id'] : undefined,
    function: {
      name: typeof fn['name'] === 'string' ? fn['name'] : undefined,
      // llama.cpp may send the arguments as an object: the API's shape is their JSON text.
      arguments: typeof args === 'string' ? args : isRecord(args) || Array.isArray(args) ? JSON.stringify(args) : undefined,
    },
  };
}

function firstChoice(chunk: Json): Json | null {
  const choices = chunk['choices'];
  if (!Array.isArray(choices)) return null;
  const first: unknown = choices[0];
  return isRecord(first) ? first : null;
}

/** The server's own words: `error.message`, `error` as text, `message`, or the JSON as it came. */
function serverMessage(body: unknown): string {
  if (typeof body === 'string') return body === '' ? 'the server sent an empty error' : quote(body);
  if (isRecord(body)) {
    const error = body['error'];
    if (isRecord(error) && typeof error['message'] === 'string') return error['message'];
    if (typeof error === 'string') return error;
    if (typeof body['message'] === 'string') return body['message'];
  }
  return quote(JSON.stringify(body));
}

function parseOr(text: string, fallback: unknown = text): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return fallback;
  }
}

function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}

function quote(text: string): string {
  return text.length > QUOTED_MAX ? `${text.slice(0, QUOTED_MAX)}…` : text;
}
