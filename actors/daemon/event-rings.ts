// Each session's recent events, as the lines its clients were sent, for `session.resume` with
// `after_seq` (PROTOCOL.md §2): a client that reconnects gets what it missed, in order, with no
// gap and no duplicate. Bounded three ways: events per session, bytes per session, and bytes
// over all sessions (the least recently active session's events go first).
//
// A session's lines are kept as bytes in one circular buffer, and where each one lies in two
// typed arrays. Kept as strings, every event outlived a few young-generation collections, was
// copied into the old generation and died there 2,000 events later: at 10,000 turns a second
// that was a third of the daemon's collection time. A line is copied out for a replay.

/** Events kept per session (PROTOCOL.md §2). */
export const EVENTS_PER_SESSION = 2000;
/** A session of huge events keeps fewer of them. */
const BYTES_PER_SESSION = 8 * 1024 * 1024;
/** All sessions' buffers together; past it, whole rings of the least recently active sessions are dropped. */
const BYTES_IN_ALL = 128 * 1024 * 1024;
/** A session's buffer starts this small and doubles as its events need, up to BYTES_PER_SESSION. */
const FIRST_CAPACITY = 16 * 1024;

/** An event's line as sent: text, or bytes for an event made from bytes (a queue's, see queue-mirrors.ts). */
export type EventLine = string | Buffer;

export interface Replay {
  lastSeq: number;
  lines: EventLine[];
  /** Set when events after the asked seq are no longer kept: the seq of the first one replayed. */
  firstSeq?: number;
}

const EMPTY = Buffer.alloc(0);
/**
 * A line this long is kept as it came (one object, which the collector does not copy) rather
 * than in the buffer: copying it in would make the buffer grow, and leave the old one to the
 * collector, for one line (a long reply's `message.complete`).
 */
const LARGE_LINE_BYTES = 64 * 1024;
/** In `starts`: the line is in `large`, not in the buffer. */
const NOT_IN_BUFFER = -1;

/** One session's kept lines, oldest first: small ones in a circular byte buffer, large ones as they are. */
class LineRing {
  /** The seq of the last event numbered for the session (0: none yet). */
  lastSeq = 0;
  /** When the session last had an event, on the rings' own count: the least recent go first. */
  lastActive = 0;
  private buffer: Buffer = EMPTY;
  private readonly starts = new Int32Array(EVENTS_PER_SESSION);
  private readonly sizes = new Int32Array(EVENTS_PER_SESSION);
  private readonly large: (EventLine | undefined)[] = [];
  /** Slot of the oldest kept line. */
  private first = 0;
  private count = 0;
  /** Bytes of the kept lines in the buffer, and of the others. */
  private inBuffer = 0;
  private largeBytes = 0;
  /** Lines kept in the buffer; where the oldest of them starts, and where the next one would go. */
  private buffered = 0;
  private head = 0;
  private tail = 0;

  get kept(): number {
    return this.count;
  }

  /** The memory the ring holds. */
  get footprint(): number {
    return this.buffer.length + this.largeBytes;
  }

  /** Keeps the line, dropping the oldest ones as the bounds need; returns how much the footprint grew. */
  push(line: EventLine): number {
    const before = this.footprint;
    const size = typeof line === 'string' ? Buffer.byteLength(line) : line.length;
    if (this.count === EVENTS_PER_SESSION) this.dropOldest();
    while (this.count > 0 && this.inBuffer + this.largeBytes + size > BYTES_PER_SESSION) this.dropOldest();
    const slot = (this.first + this.count) % EVENTS_PER_SESSION;
    if (size >= LARGE_LINE_BYTES) {
      this.large[slot] = line;
      this.starts[slot] = NOT_IN_BUFFER;
      this.largeBytes += size;
    } else {
      const at = this.placeAt(size);
      if (typeof line === 'string') this.buffer.write(line, at, size, 'utf8');
      else line.copy(this.buffer, at);
      this.starts[slot] = at;
      if (this.buffered === 0) this.head = at;
      this.buffered++;
      this.inBuffer += size;
      this.tail = at + size;
    }
    this.sizes[slot] = size;
    this.count++;
    return this.footprint - before;
  }

  /** Copies of the newest `n` kept lines, oldest first (a line in the buffer is overwritten later). */
  newest(n: number): EventLine[] {
    const lines: EventLine[] = [];
    for (let i = this.count - n; i < this.count; i++) {
      const slot = (this.first + i) % EVENTS_PER_SESSION;
      const at = this.starts[slot]!;
      lines.push(at === NOT_IN_BUFFER ? this.large[slot]! : Buffer.from(this.buffer.subarray(at, at + this.sizes[slot]!)));
    }
    return lines;
  }

  /** Drops every kept line and the buffer; returns the bytes freed. */
  clear(): number {
    const freed = this.footprint;
    this.buffer = EMPTY;
    this.large.length = 0;
    this.first = this.count = this.inBuffer = this.largeBytes = this.buffered = this.head = this.tail = 0;
    return freed;
  }

  /**
   * Where the line goes: where it fits; else, under the session's bound, in a bigger or compacted
   * buffer; else where the oldest lines were, once dropped (a full buffer cycles, it is not compacted).
   */
  private placeAt(size: number): number {
    for (;;) {
      const at = this.placeFor(size);
      if (at !== null) return at;
      if (this.buffered > 0 && this.buffer.length >= BYTES_PER_SESSION) this.dropOldest();
      else return this.grow(size);
    }
  }

  /**
   * Where a line of `size` bytes fits in the buffer without overwriting a kept one, or null. The
   * kept bytes run from head to tail, wrapping past the buffer's end when tail is not after head.
   */
  private placeFor(size: number): number | null {
    if (this.buffered === 0) return size <= this.buffer.length ? 0 : null;
    if (this.tail > this.head) {
      if (this.tail + size <= this.buffer.length) return this.tail;
      return size <= this.head ? 0 : null;
    }
    return this.tail + size <= this.head ? this.tail : null;
  }

  private dropOldest(): void {
    const slot = this.first;
    const size = this.sizes[slot]!;
    if (this.starts[slot] === NOT_IN_BUFFER) {
      this.large[slot] = undefined;
      this.largeBytes -= size;
    } else {
      this.inBuffer -= size;
      this.buffered--;
    }
    this.first = (slot + 1) % EVENTS_PER_SESSION;
    this.count--;
    if (this.buffered === 0) this.head = this.tail = 0;
    else if (this.starts[slot] !== NOT_IN_BUFFER) this.head = this.startOfOldestBuffered();
  }

  private startOfOldestBuffered(): number {
    for (let i = 0; ; i++) {
      const at = this.starts[(this.first + i) % EVENTS_PER_SESSION]!;
      if (at !== NOT_IN_BUFFER) return at;
    }
  }

  /**
   * A buffer with room for the kept lines and `size` more, laid out from its start so the new line
   * goes right after them (doubling; never past the session's bound, which push has made room
   * under). A third of it is left free: a buffer compacted nearly full would be compacted again
   * every few lines, copying all its kept bytes each time.
   */
  private grow(size: number): number {
    let capacity = Math.max(FIRST_CAPACITY, this.buffer.length);
    while (capacity < ((this.inBuffer + size) * 3) / 2) capacity *= 2;
    const next = Buffer.allocUnsafeSlow(Math.min(capacity, BYTES_PER_SESSION));
    let at = 0;
    for (let i = 0; i < this.count; i++) {
      const slot = (this.first + i) % EVENTS_PER_SESSION;
      const start = this.starts[slot]!;
      if (start === NOT_IN_BUFFER) continue;
      this.buffer.copy(next, at, start, start + this.sizes[slot]!);
      this.starts[slot] = at;
      at += this.sizes[slot]!;
    }
    this.buffer = next;
    this.head = 0;
    this.tail = at;
    return at;
  }
}

export class EventRings {
  private readonly rings = new Map<string, LineRing>();
  private bytes = 0;
  private events = 0;

  /** Numbers the session's next event; `line(seq)` makes its line, which is kept and returned. */
  record(sid: string, line: (seq: number) => EventLine): EventLine {
    const ring = this.touch(sid);
    const text = line(++ring.lastSeq);
    this.bytes += ring.push(text);
    if (this.bytes > BYTES_IN_ALL) this.evictIdle(sid);
    return text;
  }

  lastSeq(sid: string): number {
    return this.rings.get(sid)?.lastSeq ?? 0;
  }

  /** The kept events after `afterSeq`; `firstSeq` says where the replay starts when some were lost. */
  since(sid: string, afterSeq: number): Replay {
    const ring = this.rings.get(sid);
    if (ring === undefined) return afterSeq === 0 ? { lastSeq: 0, lines: [] } : { lastSeq: 0, lines: [], firstSeq: 1 };
    const oldest = ring.lastSeq - ring.kept + 1;
    // A client ahead of the daemon (it counted with a daemon that has since restarted) gets everything kept.
    const from = afterSeq > ring.lastSeq ? oldest : Math.max(afterSeq + 1, oldest);
    const lines = ring.newest(ring.lastSeq - from + 1);
    const complete = afterSeq <= ring.lastSeq && afterSeq + 1 >= oldest;
    return complete ? { lastSeq: ring.lastSeq, lines } : { lastSeq: ring.lastSeq, lines, firstSeq: from };
  }

  /** Stamps the ring's activity instead of moving it to the map's end: a delete and set per event made 6% of the daemon's garbage. */
  private touch(sid: string): LineRing {
    let ring = this.rings.get(sid);
    if (ring === undefined) {
      ring = new LineRing();
      this.rings.set(sid, ring);
    }
    ring.lastActive = ++this.events;
    return ring;
  }

  /** Drops the kept events of the least recently active sessions (their seq counters stay). */
  /** A deleted session's ring goes (PROTOCOL.md §2.3): nothing of it is replayed again. */
  drop(sid: string): void {
    const ring = this.rings.get(sid);
    if (ring === undefined) return;
    this.bytes -= ring.clear();
    this.rings.delete(sid);
  }

  private evictIdle(current: string): void {
    const leastRecentFirst = [...this.rings].sort(([, a], [, b]) => a.lastActive - b.lastActive);
    for (const [sid, ring] of leastRecentFirst) {
      if (this.bytes <= BYTES_IN_ALL) return;
      if (sid !== current) this.bytes -= ring.clear();
    }
  }
}
