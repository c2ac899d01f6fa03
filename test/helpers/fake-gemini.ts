// A fake Gemini API for Gemini CLI: node:http on 127.0.0.1, port 0. `…:streamGenerateContent`
// answers one SSE `data:` line per piece (candidates with parts, a finish reason, usage);
// `…:generateContent` the same as one JSON; `…:countTokens` a count. What it answers is decided by
// the request's last content: a functionResponse gets `done: <output>`; a user text `BASH:<cmd>`
// gets a run_shell_command call; `SLOW` gets 100 words 100 ms apart; anything else `Hello from
// Gemini`. Every request's body is kept.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { LoopbackServer } from './loopback-server.js';

export interface GeminiBody {
  contents: { role: string; parts: { text?: string; functionCall?: unknown; functionResponse?: { name: string; response: unknown } }[] }[];
}

type Part = { text: string } | { functionCall: { name: string; args: Record<string, unknown> } };

const USAGE = { promptTokenCount: 120, candidatesTokenCount: 30, totalTokenCount: 157, cachedContentTokenCount: 40, thoughtsTokenCount: 7 };

export class FakeGemini {
  readonly requests: GeminiBody[] = [];
  private server!: LoopbackServer;

  static async start(): Promise<FakeGemini> {
    const fake = new FakeGemini();
    fake.server = await LoopbackServer.start((req, body, res) => fake.handle(req, body, res));
    return fake;
  }

  get baseUrl(): string {
    return this.server.origin;
  }

  close(): Promise<void> {
    return this.server.close();
  }

  private async handle(req: IncomingMessage, raw: Buffer, res: ServerResponse): Promise<void> {
    const path = req.url ?? '';
    if (path.includes(':countTokens')) {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"totalTokens":120}');
      return;
    }
    if (req.method !== 'POST' || !path.includes(':')) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"code":404,"message":"not here"}}');
      return;
    }
    const body = JSON.parse(raw.toString('utf8')) as GeminiBody;
    this.requests.push(body);
    const { pieces, gapMs } = answer(body);
    if (!path.includes(':streamGenerateContent')) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(chunk(pieces, true)));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    for (let i = 0; i < pieces.length; i++) {
      res.write(`data: ${JSON.stringify(chunk([pieces[i]!], i === pieces.length - 1))}\n\n`);
      if (gapMs > 0) await new Promise((resolve) => setTimeout(resolve, gapMs));
      if (res.destroyed) return;
    }
    res.end();
  }
}

function chunk(parts: Part[], last: boolean): Record<string, unknown> {
  return { candidates: [{ content: { role: 'model', parts }, index: 0, ...(last ? { finishReason: 'STOP' } : {}) }], ...(last ? { usageMetadata: USAGE } : {}) };
}

function answer(body: GeminiBody): { pieces: Part[]; gapMs: number } {
  const last = body.contents.at(-1);
  const response = last?.parts.find((part) => part.functionResponse !== undefined)?.functionResponse;
  if (response !== undefined) return { pieces: [{ text: `done: ${JSON.stringify(response.response)}` }], gapMs: 0 };
  const said = [...body.contents].reverse().find((content) => content.role === 'user' && content.parts.some((part) => part.text !== undefined))?.parts.map((part) => part.text ?? '').join('') ?? '';
  const bash = /BASH:(.+)$/m.exec(said);
  if (bash) return { pieces: [{ functionCall: { name: 'run_shell_command', args: { command: bash[1]!.trim() } } }], gapMs: 0 };
  if (said.includes('SLOW')) return { pieces: Array.from({ length: 100 }, (_, i) => ({ text: `word${i} ` })), gapMs: 100 };
  return { pieces: [{ text: 'Hello ' }, { text: 'from ' }, { text: 'Gemini' }], gapMs: 0 };
}

/** Everything a request carried of the conversation, as text. */
export function geminiConversation(body: GeminiBody): string {
  return JSON.stringify(body.contents);
}
