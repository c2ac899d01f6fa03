// HTTP clients for the edge's tests, on node:http so that every header (Host, Origin, Cookie) is
// the test's to set: one-shot requests, and a server-sent-events reader that parses the frames.
import { request, type IncomingHttpHeaders } from 'node:http';
import { Waiters } from './waiters.js';

export interface HttpAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  bytes: Buffer;
  json(): Record<string, unknown>;
}

export interface RequestSpec {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer | object;
}

export function httpRequest(port: number, spec: RequestSpec, timeoutMs = 15_000): Promise<HttpAnswer> {
  const body = spec.body === undefined || typeof spec.body === 'string' || Buffer.isBuffer(spec.body) ? spec.body : JSON.stringify(spec.body);
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: spec.method ?? 'GET', path: spec.path, headers: spec.headers ?? {}, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const bytes = Buffer.concat(chunks);
        const text = bytes.toString('utf8');
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, bytes, json: () => JSON.parse(text) as Record<string, unknown> });
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${spec.method ?? 'GET'} ${spec.path}: no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}

export interface SseEvent {
  id?: string;
  event: string;
  data: string;
}

/** An open event stream: every event it has received, and waits on them. */
export class SseReader {
  readonly events: SseEvent[] = [];
  status = 0;
  headers: IncomingHttpHeaders = {};
  raw = '';
  private readonly waiters = new Waiters<void>();
  private destroy: () => void = () => {};
  private buffer = '';
  readonly ended: Promise<void>;

  constructor(port: number, path: string, headers: Record<string, string>) {
    let ended: () => void = () => {};
    this.ended = new Promise((resolve) => (ended = resolve));
    const req = request({ host: '127.0.0.1', port, path, headers }, (res) => {
      this.status = res.statusCode ?? 0;
      this.headers = res.headers;
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => this.take(chunk));
      res.on('close', ended);
      this.waiters.offer(undefined, 'all');
    });
    req.on('error', ended);
    req.end();
    this.destroy = () => req.destroy();
  }

  async until(match: (events: SseEvent[]) => boolean, what: string, timeoutMs = 15_000): Promise<void> {
    if (match(this.events)) return;
    await this.waiters.wait(() => match(this.events), timeoutMs, () => `no ${what} on the stream within ${timeoutMs} ms; got: ${this.events.map((e) => e.event).join(', ')}`);
  }

  close(): void {
    this.destroy();
  }

  private take(chunk: string): void {
    this.raw += chunk;
    this.buffer += chunk;
    let end: number;
    while ((end = this.buffer.indexOf('\n\n')) !== -1) {
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      const event: SseEvent = { event: 'message', data: '' };
      let data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const name = line.slice(0, colon);
        const value = line.slice(colon + 1).replace(/^ /, '');
        if (name === 'id') event.id = value;
        else if (name === 'event') event.event = value;
        else if (name === 'data') data.push(value);
      }
      if (data.length === 0) continue;
      event.data = data.join('\n');
      data = [];
      this.events.push(event);
    }
    this.waiters.offer(undefined, 'all');
  }
}

/** The text of the replies streamed on an event stream. */
export function streamedText(events: readonly SseEvent[]): string {
  return events
    .filter((e) => e.event === 'message.delta')
    .map((e) => String((JSON.parse(e.data) as { text: string }).text))
    .join('');
}
