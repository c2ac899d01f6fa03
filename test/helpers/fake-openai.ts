// A fake OpenAI-compatible server for tests and benchmarks: node:http on 127.0.0.1, port 0, real
// SSE in the API's chunk shapes. Each request takes the next scripted reply (or the default
// one); every request is kept so a test can read what the agent sent. Like the real API, it
// answers 400 to a request whose tool calls and tool results do not pair up.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { LoopbackServer } from './loopback-server.js';
import { Waiters } from './waiters.js';

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  /** As OpenAI sends them: the cached share of the prompt, the reasoning share of the completion. */
  prompt_tokens_details?: { cached_tokens: number };
  completion_tokens_details?: { reasoning_tokens: number };
}

export interface FakeToolCall {
  id: string;
  name: string;
  /** The arguments' text, in the fragments it is sent in. */
  args: string[];
}

export type Reply =
  /** A streamed text reply, one chunk per fragment; `usage: null` sends no usage chunk. */
  | { text: string[]; reasoning?: string[]; usage?: Usage | null; gapMs?: number }
  /** A streamed tool-call reply; `reuseIndex` sends every call at index 0 (Ollama's variant). */
  | { text?: string[]; toolCalls: FakeToolCall[]; reuseIndex?: boolean; usage?: Usage | null }
  /** An HTTP error with an OpenAI error body. */
  | { status: number; message: string; code?: string; headers?: Record<string, string> }
  /** Sends these fragments, then nothing more until the client goes away. */
  | { stallAfter: string[] }
  /** Sends these fragments, then cuts the connection mid-stream. */
  | { cutAfter: string[] }
  /** A non-streamed reply (a compression's summary). */
  | { summary: string }
  /**
   * The body exactly as given, piece by piece (`gapMs` apart), for servers that bend the stream's
   * shape; then the response ends, or with `hold` stays open until the client leaves.
   */
  | { raw: string[]; contentType?: string; gapMs?: number; hold?: boolean };

export interface SeenRequest {
  body: ChatBody;
  headers: IncomingMessage['headers'];
}

/** A user message's part, as a request with images carries it (PROTOCOL.md §2.4). */
export type ChatPart = { type: string; text?: string; image_url?: { url: string } };

export interface ChatBody {
  model: string;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  messages: { role: string; content: string | null | ChatPart[]; tool_calls?: { id: string; function: { name: string; arguments: string } }[]; tool_call_id?: string }[];
  tools?: { function: { name: string } }[];
  [key: string]: unknown;
}

const DEFAULT_USAGE: Usage = { prompt_tokens: 11, completion_tokens: 7 };

export class FakeOpenAI {
  readonly requests: SeenRequest[] = [];
  /** Replies for the next requests, in order; when empty, `fallback` answers. */
  readonly script: Reply[] = [];
  fallback: (body: ChatBody) => Reply = () => ({ text: ['ok'] });
  /** Off for benchmarks: no request is kept. */
  keepRequests = true;
  private server!: LoopbackServer;
  private readonly arrivals = new Waiters<number>();
  private nextId = 0;

  static async start(): Promise<FakeOpenAI> {
    const fake = new FakeOpenAI();
    fake.server = await LoopbackServer.start((req, body, res) => fake.handle(req, body, res));
    return fake;
  }

  get baseUrl(): string {
    return `${this.server.origin}/v1`;
  }

  reply(...replies: Reply[]): this {
    this.script.push(...replies);
    return this;
  }

  /** Resolves once `count` requests have arrived in all. */
  async requestCount(count: number, timeoutMs = 10_000): Promise<void> {
    if (this.requests.length >= count) return;
    await this.arrivals.wait((n) => n >= count, timeoutMs, () => `only ${this.requests.length} of ${count} requests arrived within ${timeoutMs} ms`);
  }

  close(): Promise<void> {
    return this.server.close();
  }

  private async handle(req: IncomingMessage, raw: Buffer, res: ServerResponse): Promise<void> {
    if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
      sendError(res, { status: 404, message: `no route ${req.method} ${req.url}` });
      return;
    }
    let body: ChatBody;
    try {
      body = JSON.parse(raw.toString('utf8')) as ChatBody;
    } catch {
      sendError(res, { status: 400, message: 'body is not JSON' });
      return;
    }
    if (this.keepRequests) this.requests.push({ body, headers: req.headers });
    this.arrivals.offer(this.requests.length, 'all');
    const unpaired = pairingProblem(body.messages);
    if (unpaired !== null) {
      sendError(res, { status: 400, message: unpaired, code: 'invalid_request_error' });
      return;
    }
    const reply = this.script.shift() ?? this.fallback(body);
    await this.send(res, body, reply);
  }

  private async send(res: ServerResponse, body: ChatBody, reply: Reply): Promise<void> {
    if ('status' in reply) return sendError(res, reply);
    const id = `chatcmpl-${++this.nextId}`;
    if ('summary' in reply) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id, object: 'chat.completion', created: 1, model: body.model, choices: [{ index: 0, message: { role: 'assistant', content: reply.summary }, finish_reason: 'stop' }], usage: { ...DEFAULT_USAGE, total_tokens: 18 } }));
      return;
    }
    if ('raw' in reply) return sendRaw(res, reply);
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.flushHeaders();
    const chunk = (delta: object, finish: string | null = null): void => {
      res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 1, model: body.model, choices: [{ index: 0, delta, finish_reason: finish }], usage: null })}\n\n`);
    };
    if ('stallAfter' in reply || 'cutAfter' in reply) {
      const fragments = 'stallAfter' in reply ? reply.stallAfter : reply.cutAfter;
      for (const text of fragments) chunk({ content: text });
      if ('cutAfter' in reply) res.socket?.destroy();
      return; // stalled: the response stays open until the client leaves
    }
    for (const text of ('reasoning' in reply ? reply.reasoning : undefined) ?? []) chunk({ reasoning_content: text });
    for (const text of reply.text ?? []) {
      chunk({ content: text });
      if ('gapMs' in reply && reply.gapMs) await new Promise((resolve) => setTimeout(resolve, reply.gapMs));
    }
    if ('toolCalls' in reply) {
      reply.toolCalls.forEach((call, i) => {
        const index = reply.reuseIndex ? 0 : i;
        chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] });
        for (const part of call.args) chunk({ tool_calls: [{ index, function: { arguments: part } }] });
      });
    }
    chunk({}, 'toolCalls' in reply ? 'tool_calls' : 'stop');
    const usage = reply.usage === undefined ? DEFAULT_USAGE : reply.usage;
    if (usage !== null && body.stream_options?.include_usage) {
      res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 1, model: body.model, choices: [], usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens } })}\n\n`);
    }
    res.end('data: [DONE]\n\n');
  }
}

async function sendRaw(res: ServerResponse, reply: { raw: string[]; contentType?: string; gapMs?: number; hold?: boolean }): Promise<void> {
  res.writeHead(200, { 'content-type': reply.contentType ?? 'text/event-stream', 'cache-control': 'no-cache' });
  res.flushHeaders();
  for (const [i, piece] of reply.raw.entries()) {
    if (i > 0 && reply.gapMs) await new Promise((resolve) => setTimeout(resolve, reply.gapMs));
    if (res.destroyed) return;
    res.write(piece);
  }
  if (!reply.hold) res.end();
}

/** One SSE `data:` event holding a chat.completion.chunk with this choice (or these fields when `choice` is null). */
export function chunkEvent(delta: object | null, finish: string | null = null, extra: object = {}): string {
  const choices = delta === null ? {} : { choices: [{ index: 0, delta, finish_reason: finish }] };
  return `data: ${JSON.stringify({ id: 'chatcmpl-raw', object: 'chat.completion.chunk', created: 1, model: 'test-model', ...choices, ...extra })}\n\n`;
}

function sendError(res: ServerResponse, reply: { status: number; message: string; code?: string; headers?: Record<string, string> }): void {
  res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
  res.end(JSON.stringify({ error: { message: reply.message, type: 'invalid_request_error', param: null, code: reply.code ?? null } }));
}

/** The API's rule: each assistant tool call is answered by a `tool` message right after it, and every `tool` message answers one. */
export function pairingProblem(messages: ChatBody['messages']): string | null {
  let open: string[] = [];
  for (const [i, m] of messages.entries()) {
    if (m.role === 'tool') {
      if (!open.includes(m.tool_call_id ?? '')) return `messages[${i}]: a tool message must answer a preceding tool call (tool_call_id ${m.tool_call_id})`;
      open = open.filter((id) => id !== m.tool_call_id);
      continue;
    }
    if (open.length > 0) return `messages[${i}]: the tool calls ${open.join(', ')} have no tool message answering them`;
    if (m.role === 'assistant' && m.tool_calls) open = m.tool_calls.map((c) => c.id);
  }
  return open.length > 0 ? `the tool calls ${open.join(', ')} have no tool message answering them` : null;
}
