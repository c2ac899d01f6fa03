// A session's events as server-sent events (PROTOCOL.md §5.3): a subscriber of the gateway like a
// socket client, whose JSON-RPC lines are written as SSE frames: the resume's answer becomes
// `event: ready`, each event `id: <seq>` / `event: <type>` / `data: <payload>`, each open server
// request `event: request`. It cannot answer: questions are answered by POST. A reader that stops
// reading is cut by the same unread bound as any client.
import type { ServerResponse } from 'node:http';
import { isRecord } from '../protocol/fields.js';
import { ClientOutput } from '../actors/daemon/client-output.js';
import type { Overrun, UnreadLimits } from '../actors/daemon/unread-bound.js';

/** A comment line this often keeps proxies and browsers from closing an idle stream. */
export const KEEPALIVE_MS = 15_000;

export const EVENT_STREAM_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
  connection: 'keep-alive',
};

export class EventStream {
  private readonly output: ClientOutput;
  private readonly keepalive: NodeJS.Timeout;

  constructor(res: ServerResponse, limits: UnreadLimits, onOverrun: (overrun: Overrun, unreadBytes: number) => void) {
    res.writeHead(200, EVENT_STREAM_HEADERS);
    res.flushHeaders();
    // The frames of one event-loop turn leave as one write, as a socket client's lines do.
    this.output = new ClientOutput(res, limits, onOverrun);
    this.keepalive = setInterval(() => this.output.write(': keepalive\n\n'), KEEPALIVE_MS);
    res.once('close', () => clearInterval(this.keepalive));
  }

  /** A line the gateway sent this subscriber. */
  write(line: string | Buffer): void {
    const frame = sseFrame(typeof line === 'string' ? line : line.toString('utf8'));
    if (frame !== null) this.output.write(frame);
  }

  end(): void {
    clearInterval(this.keepalive);
    this.output.end();
  }

  destroy(): void {
    this.output.destroy();
  }
}

// The gateway hands one line to every subscriber of a session in turn: the last conversion is
// kept, so 500 subscribers parse a line once, not 500 times.
let lastLine = '';
let lastFrame: string | null = null;

/** The SSE frame for a JSON-RPC line, or null for a line a stream does not carry. */
export function sseFrame(line: string): string | null {
  if (line === lastLine) return lastFrame;
  lastLine = line;
  lastFrame = convert(line);
  return lastFrame;
}

function convert(line: string): string | null {
  let message: unknown;
  try {
    message = JSON.parse(line);
  } catch {
    return null;
  }
  if (!isRecord(message)) return null;
  const params = message['params'];
  if (message['method'] === 'event' && isRecord(params)) {
    return `id: ${String(params['seq'])}\nevent: ${String(params['type'])}\ndata: ${JSON.stringify(params['payload'] ?? {})}\n\n`;
  }
  if (typeof message['method'] === 'string' && typeof message['id'] === 'string') {
    return `event: request\ndata: ${JSON.stringify({ request_id: message['id'], method: message['method'], params: params ?? {} })}\n\n`;
  }
  const result = message['result'];
  if (isRecord(result) && 'last_seq' in result) {
    const ready = { last_seq: result['last_seq'], replay: result['replay'] ?? 'complete', ...('first_seq' in result ? { first_seq: result['first_seq'] } : {}) };
    return `event: ready\ndata: ${JSON.stringify(ready)}\n\n`;
  }
  return null;
}
