// Bytes stop here: splits a byte stream into UTF-8 lines, with a bound on a line's size.
// A line over the bound is reported once and skipped up to its newline. Memory is bounded by
// the bound itself: an unfinished line is copied into one reusable buffer of `maxBytes`
// (allocated on first need; only the pages written to become resident), so a caller may reuse
// its chunk buffer and nothing per chunk, or per growth step, is left for the garbage collector.
// After a line longer than KEEP_BYTES the buffer is let go: its written pages would otherwise
// stay resident for the life of the connection (a client that once sent a 5 MB prompt).

export const MAX_FRAME_BYTES = 8 * 1024 * 1024;

export interface LineSink {
  line(text: string): void;
  /** A line grew past the bound; the rest of it up to the next newline is discarded. */
  oversized(): void;
}

const NEWLINE = 0x0a;
/** The longest unfinished line whose buffer is kept for the next one: 64 KiB resident per reader at most. */
const KEEP_BYTES = 64 * 1024;
const EMPTY = Buffer.alloc(0);

export class LineReader {
  private pending: Buffer = EMPTY;
  private pendingBytes = 0;
  private skipping = false;

  constructor(
    private readonly sink: LineSink,
    private readonly maxBytes = MAX_FRAME_BYTES,
  ) {}

  /** Reads a chunk; the caller may reuse the chunk's memory once this returns. */
  push(chunk: Buffer): void {
    let start = 0;
    while (start < chunk.length) {
      const newline = chunk.indexOf(NEWLINE, start);
      const end = newline === -1 ? chunk.length : newline;
      if (this.skipping) {
        if (newline === -1) return;
        this.skipping = false;
        start = newline + 1;
        continue;
      }
      // Offsets, not a subarray per line: at 200,000 lines a second each Buffer object is garbage.
      if (this.pendingBytes + (end - start) > this.maxBytes) {
        this.release();
        this.sink.oversized();
        if (newline === -1) {
          this.skipping = true;
          return;
        }
        start = newline + 1;
        continue;
      }
      if (newline === -1) {
        this.keep(chunk, start, end);
        return;
      }
      if (this.pendingBytes === 0) {
        this.emit(chunk, start, end);
      } else {
        this.keep(chunk, start, end);
        this.emit(this.pending, 0, this.pendingBytes);
        this.release();
      }
      start = newline + 1;
    }
  }

  /** End of stream: a last line without a newline still counts. */
  end(): void {
    if (!this.skipping && this.pendingBytes > 0) this.emit(this.pending, 0, this.pendingBytes);
    this.release();
    this.skipping = false;
  }

  private release(): void {
    if (this.pendingBytes > KEEP_BYTES) this.pending = EMPTY;
    this.pendingBytes = 0;
  }

  private keep(chunk: Buffer, start: number, end: number): void {
    if (this.pending.length === 0) this.pending = Buffer.allocUnsafe(this.maxBytes);
    chunk.copy(this.pending, this.pendingBytes, start, end);
    this.pendingBytes += end - start;
  }

  private emit(bytes: Buffer, start: number, end: number): void {
    const text = bytes.toString('utf8', start, end);
    if (text.trim() === '') return;
    this.sink.line(text);
  }
}
