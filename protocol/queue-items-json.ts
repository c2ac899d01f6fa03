// A queue's items as they appear in a `session.queue` event (PROTOCOL.md §2.1): each item's JSON,
// comma-separated, kept as bytes between changes. Every event carries the whole queue, so n
// queued prompts cost n² item views over their life; kept this way, the two changes a busy
// session sees most (a prompt added at the tail, the head started) cost one item, and an event
// is a copy. The host keeps one per session for its events, the daemon one per session for the
// events it makes from the host's changes (queue-deltas).

/**
 * The start of a `session.queue` event's params, up to its items: `{"type":"session.queue",…,
 * "items":[`. The host's full events and the daemon's events made from deltas both start so.
 */
export function queueParamsOpen(sid: string, revision: number): string {
  return `{"type":"session.queue","session_id":${JSON.stringify(sid)},"payload":{"revision":${revision},"items":[`;
}

const COMMA = 0x2c;
const MIN_CAPACITY = 4096;

/**
 * Never writes below `end`: a slice handed out by `json` is held by a writer until the end of the
 * event-loop turn, so it must stay as it was; room is made by moving to a new buffer.
 */
export class QueueItemsJson {
  /** Each item's byte length, in queue order. */
  private lengths: number[] = [];
  private bytes = Buffer.alloc(0);
  private start = 0;
  private end = 0;

  get size(): number {
    return this.lengths.length;
  }

  /** The items, comma-separated (no brackets). */
  get json(): Buffer {
    return this.bytes.subarray(this.start, this.end);
  }

  append(item: Buffer): void {
    const separator = this.lengths.length > 0 ? 1 : 0;
    if (this.end + separator + item.length > this.bytes.length) this.moveTo(Math.max(MIN_CAPACITY, 2 * (this.end - this.start + separator + item.length)));
    if (separator) this.bytes[this.end++] = COMMA;
    this.end += item.copy(this.bytes, this.end);
    this.lengths.push(item.length);
  }

  /** The head item leaves. */
  shift(): void {
    const head = this.lengths.shift();
    if (head === undefined) return;
    this.start = this.lengths.length === 0 ? this.end : this.start + head + 1;
  }

  reset(items: readonly Buffer[]): void {
    this.lengths = [];
    this.bytes = Buffer.alloc(0);
    this.start = this.end = 0;
    for (const item of items) this.append(item);
  }

  private moveTo(capacity: number): void {
    const moved = Buffer.allocUnsafe(capacity);
    this.end = this.bytes.copy(moved, 0, this.start, this.end);
    this.start = 0;
    this.bytes = moved;
  }
}
