// A fake OpenAI Responses API for Codex (through @zed-industries/codex-acp): node:http on
// 127.0.0.1, port 0. Each `POST /v1/responses` (streamed) gets the SSE Codex reads:
// response.created, a message item (output_item.added, output_text.delta…, output_item.done) or a
// function_call item, then response.completed with usage. What it answers is decided by the
// request's last input: a function_call_output gets `done: <output>`; a user text `BASH:<cmd>`
// gets an exec_command call; `SLOW` gets 100 words 100 ms apart; anything else `Hello from Codex`.
// Every request's body is kept, so a test can read the conversation Codex sent.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { LoopbackServer } from './loopback-server.js';

export interface ResponsesBody {
  model: string;
  stream?: boolean;
  input: { type?: string; role?: string; content?: unknown; output?: unknown; call_id?: string }[];
  tools?: { name?: string }[];
}

export class FakeResponses {
  readonly requests: ResponsesBody[] = [];
  private server!: LoopbackServer;
  private count = 0;

  static async start(): Promise<FakeResponses> {
    const fake = new FakeResponses();
    fake.server = await LoopbackServer.start((req, body, res) => fake.handle(req, body, res));
    return fake;
  }

  get baseUrl(): string {
    return `${this.server.origin}/v1`;
  }

  close(): Promise<void> {
    return this.server.close();
  }

  private async handle(req: IncomingMessage, raw: Buffer, res: ServerResponse): Promise<void> {
    if (req.method !== 'POST' || !(req.url ?? '').startsWith('/v1/responses')) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not here"}}');
      return;
    }
    const body = JSON.parse(raw.toString('utf8')) as ResponsesBody;
    this.requests.push(body);
    const id = `resp_${++this.count}`;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const send = (type: string, data: Record<string, unknown>) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
    send('response.created', { response: { id } });
    const last = body.input.at(-1);
    const said = userText(body);
    const bash = /BASH:(.+)$/m.exec(said);
    if (last?.type === 'function_call_output') {
      await message(send, res, [`done: ${JSON.stringify(last.output)}`]);
    } else if (bash) {
      send('response.output_item.done', { output_index: 0, item: { type: 'function_call', id: `fc_${this.count}`, call_id: `call_${this.count}`, name: 'exec_command', arguments: JSON.stringify({ cmd: bash[1]!.trim() }) } });
    } else if (said.includes('SLOW')) {
      await message(send, res, Array.from({ length: 100 }, (_, i) => `word${i} `), 100);
    } else {
      await message(send, res, ['Hello ', 'from ', 'Codex']);
    }
    if (res.destroyed) return;
    send('response.completed', { response: { id, usage: { input_tokens: 120, output_tokens: 30, total_tokens: 150, input_tokens_details: { cached_tokens: 40 }, output_tokens_details: { reasoning_tokens: 7 } } } });
    res.end();
  }
}

async function message(send: (type: string, data: Record<string, unknown>) => void, res: ServerResponse, pieces: string[], gapMs = 0): Promise<void> {
  const item = { type: 'message', id: 'msg_1', role: 'assistant' };
  send('response.output_item.added', { output_index: 0, item: { ...item, content: [] } });
  for (const piece of pieces) {
    send('response.output_text.delta', { output_index: 0, content_index: 0, item_id: 'msg_1', delta: piece });
    if (gapMs > 0) await new Promise((resolve) => setTimeout(resolve, gapMs));
    if (res.destroyed) return;
  }
  send('response.output_item.done', { output_index: 0, item: { ...item, content: [{ type: 'output_text', text: pieces.join('') }] } });
}

/** The newest user text of a request (its `input_text` parts). */
export function userText(body: ResponsesBody): string {
  const user = [...body.input].reverse().find((item) => item.role === 'user');
  const content = user?.content;
  if (typeof content === 'string') return content;
  return Array.isArray(content) ? content.map((part: { text?: unknown }) => (typeof part?.text === 'string' ? part.text : '')).join('') : '';
}
