// Bytes stop here: splits a byte stream into UTF-8 lines, with a bound on a line's size.
// A line over the bound is reported once and skipped up to its newline, so memory stays
// bounded by `maxBytes` plus one chunk however long the offending line is.

export const MAX_FRAME_BYTES = 8 * 1024 * 1024;

export interface LineSink {
  line(text: string): void;
  /** A line grew past the bound; the rest of it up to the next newline is discarded. */
  oversized(): void;
}

const NEWLINE = 0x0a;

export class LineReader {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private skipping = false;

  constructor(
    private readonly sink: LineSink,
    private readonly maxBytes = MAX_FRAME_BYTES,
  ) {}

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
      const piece = chunk.subarray(start, end);
      if (this.pendingBytes + piece.length > this.maxBytes) {
        this.dropPending();
        this.sink.oversized();
        if (newline === -1) {
          this.skipping = true;
          return;
        }
        start = newline + 1;
        continue;
      }
      if (newline === -1) {
        this.pending.push(piece);
        this.pendingBytes += piece.length;
        return;
      }
      start = newline + 1;
      this.emit(piece);
    }
  }

  /** End of stream: a last line without a newline still counts. */
  end(): void {
    if (!this.skipping && this.pendingBytes > 0) this.emit(Buffer.alloc(0));
    this.dropPending();
    this.skipping = false;
  }

  private emit(lastPiece: Buffer): void {
    const bytes = this.pending.length === 0 ? lastPiece : Buffer.concat([...this.pending, lastPiece]);
    this.dropPending();
    const text = bytes.toString('utf8');
    if (text.trim() === '') return;
    this.sink.line(text);
  }

  private dropPending(): void {
    this.pending = [];
    this.pendingBytes = 0;
  }
}
