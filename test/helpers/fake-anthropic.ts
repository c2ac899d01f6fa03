// A fake Anthropic Messages API for Claude Code (through @zed-industries/claude-code-acp): node:http
// on 127.0.0.1, port 0, the API's SSE events (message_start, content_block_start/delta/stop,
// message_delta, message_stop). Each `POST /v1/messages` takes the next scripted reply, or the
// fallback; every request's body is kept so a test can read the conversation Claude Code sent.
// Any other request (a token count, a probe) is answered with an empty 200 JSON.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { LoopbackServer } from './loopback-server.js';

export type AnthropicReply =
  /** Streamed text, one delta per piece, `gapMs` apart. */
  | { text: string[]; gapMs?: number }
  /** A tool_use block (after optional text), its input sent as JSON in two deltas. */
  | { text?: string[]; tool: { id: string; name: string; input: Record<string, unknown> } };

export interface MessagesBody {
  model: string;
  stream?: boolean;
  system?: unknown;
  messages: { role: string; content: string | { type: string; text?: string; content?: unknown; tool_use_id?: string }[] }[];
  tools?: { name: string }[];
}

export class FakeAnthropic {
  readonly requests: MessagesBody[] = [];
  readonly script: AnthropicReply[] = [];
  fallback: (body: MessagesBody) => AnthropicReply = () => ({ text: ['ok'] });
  private server!: LoopbackServer;

  static async start(): Promise<FakeAnthropic> {
    const fake = new FakeAnthropic();
    fake.server = await LoopbackServer.start((req, body, res) => fake.handle(req, body, res));
    return fake;
  }

  get baseUrl(): string {
    return this.server.origin;
  }

  /** The conversations Claude Code sent for its replies (the streamed requests), in order. */
  get conversations(): MessagesBody[] {
    return this.requests.filter((body) => body.stream === true);
  }

  close(): Promise<void> {
    return this.server.close();
  }

  private async handle(req: IncomingMessage, raw: Buffer, res: ServerResponse): Promise<void> {
    const path = req.url ?? '';
    if (req.method !== 'POST' || !path.startsWith('/v1/messages') || path.startsWith('/v1/messages/count_tokens')) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(path.startsWith('/v1/messages/count_tokens') ? '{"input_tokens":100}' : '{}');
      return;
    }
    const body = JSON.parse(raw.toString('utf8')) as MessagesBody;
    this.requests.push(body);
    // Claude Code also asks for short non-streamed answers (a title, a check): answered in kind.
    if (body.stream !== true) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(message(body.model, [{ type: 'text', text: 'ok' }], 'end_turn')));
      return;
    }
    const reply = this.script.shift() ?? this.fallback(body);
    await stream(res, body.model, reply);
  }
}

function message(model: string, content: unknown[], stopReason: string | null) {
  return { id: 'msg_fake', type: 'message', role: 'assistant', model, content, stop_reason: stopReason, stop_sequence: null, usage: { input_tokens: 120, output_tokens: 30 } };
}

async function stream(res: ServerResponse, model: string, reply: AnthropicReply): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const send = (event: string, data: unknown) => res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  send('message_start', { type: 'message_start', message: { ...message(model, [], null), usage: { input_tokens: 120, output_tokens: 1 } } });
  let index = 0;
  const texts = reply.text ?? [];
  if (texts.length > 0) {
    send('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
    for (const piece of texts) {
      send('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: piece } });
      if ('gapMs' in reply && reply.gapMs) await new Promise((resolve) => setTimeout(resolve, reply.gapMs));
      if (res.destroyed) return;
    }
    send('content_block_stop', { type: 'content_block_stop', index });
    index++;
  }
  let stopReason = 'end_turn';
  if ('tool' in reply) {
    const json = JSON.stringify(reply.tool.input);
    const half = Math.floor(json.length / 2);
    send('content_block_start', { type: 'content_block_start', index, content_block: { type: 'tool_use', id: reply.tool.id, name: reply.tool.name, input: {} } });
    send('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: json.slice(0, half) } });
    send('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: json.slice(half) } });
    send('content_block_stop', { type: 'content_block_stop', index });
    stopReason = 'tool_use';
  }
  send('message_delta', { type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: 30 } });
  send('message_stop', { type: 'message_stop' });
  res.end();
}
