// The model server's event stream, read as servers really write it (AGENT.md §4): LF, CRLF or CR
// line ends, comment lines (pings), `data:` lines that carry nothing, and what a server writes
// outside the SSE frame: an `error:` field, or a bare JSON line. Bytes stop here: the caller gets
// whole items, and is told of every chunk of traffic (pings included) for its idle watchdog.
import { StringDecoder } from 'node:string_decoder';

export type SseItem =
  /** An event: its `event:` name ('message' when none) and its data lines joined by `\n`. */
  | { kind: 'event'; event: string; data: string }
  /** A field SSE does not define (old llama.cpp writes `error: {...}`). */
  | { kind: 'field'; name: string; value: string }
  /** A line that is no SSE field at all: a JSON body written into the event stream unframed. */
  | { kind: 'bare'; line: string };

/** The longest line kept: one chunk of a tool call's arguments can be large, but not this large. */
export const SSE_LINE_MAX_CHARS = 16 * 1024 * 1024;

export class SseLineTooLong extends Error {}

export class SseReader {
  private readonly decoder = new StringDecoder('utf8');
  private pending = '';
  /** The last chunk ended in CR: an LF at the start of the next one belongs to that line end. */
  private afterCr = false;
  private eventName = '';
  private data: string[] = [];

  /** The items that the bytes complete, in order. */
  push(bytes: Uint8Array): SseItem[] {
    return this.lines(this.decoder.write(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)));
  }

  /** The body ended: a last line without its line end still counts, and so does an event it completes. */
  end(): SseItem[] {
    const items = this.lines(this.decoder.end());
    if (this.pending !== '') this.line(this.pending, items);
    this.pending = '';
    this.line('', items);
    return items;
  }

  private lines(text: string): SseItem[] {
    const items: SseItem[] = [];
    let start = 0;
    if (this.afterCr && text.startsWith('\n')) start = 1;
    this.afterCr = false;
    for (let i = start; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      this.line(this.pending + text.slice(start, i), items);
      this.pending = '';
      if (c === 13) {
        if (i + 1 === text.length) this.afterCr = true;
        else if (text.charCodeAt(i + 1) === 10) i++;
      }
      start = i + 1;
    }
    this.pending += text.slice(start);
    if (this.pending.length > SSE_LINE_MAX_CHARS) throw new SseLineTooLong(`a line of the stream is longer than ${SSE_LINE_MAX_CHARS / 1024 / 1024} MiB`);
    return items;
  }

  private line(line: string, items: SseItem[]): void {
    if (line === '') {
      // An event with no data (a `data:` keep-alive, or an `event:` line alone) is not dispatched.
      if (this.data.some((part) => part !== '')) {
        items.push({ kind: 'event', event: this.eventName || 'message', data: this.data.join('\n') });
      }
      this.eventName = '';
      this.data = [];
      return;
    }
    if (line.startsWith(':')) return;
    if (line.startsWith('{') || line.startsWith('[')) {
      items.push({ kind: 'bare', line });
      return;
    }
    const colon = line.indexOf(':');
    const name = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (name === 'data') this.data.push(value);
    else if (name === 'event') this.eventName = value;
    else if (name !== 'id' && name !== 'retry') items.push({ kind: 'field', name, value });
  }
}
