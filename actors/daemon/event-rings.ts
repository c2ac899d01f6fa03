// Each session's recent events, as the lines its clients were sent, for `session.resume` with
// `after_seq` (PROTOCOL.md §2): a client that reconnects gets what it missed, in order, with no
// gap and no duplicate. Bounded three ways: events per session, bytes per session, and bytes
// over all sessions (the least recently active session's events go first).

/** Events kept per session (PROTOCOL.md §2). */
export const EVENTS_PER_SESSION = 2000;
/** A session of huge events keeps fewer of them. */
const BYTES_PER_SESSION = 8 * 1024 * 1024;
/** All sessions together; past it, whole rings of the least recently active sessions are dropped. */
const BYTES_IN_ALL = 128 * 1024 * 1024;

interface Ring {
  /** The seq of the last event numbered for the session (0: none yet). */
  lastSeq: number;
  /** Kept lines, oldest first; the first has seq lastSeq - lines.length + 1. */
  lines: EventLine[];
  /** Index of the oldest kept line in `lines` (dropped lines are skipped, then compacted). */
  head: number;
  bytes: number;
  /** When the session last had an event, on the rings' own count: the least recent go first. */
  lastActive: number;
}

/** An event's line as sent: text, or bytes for an event made from bytes (a queue's, see queue-mirrors.ts). */
export type EventLine = string | Buffer;

export interface Replay {
  lastSeq: number;
  lines: EventLine[];
  /** Set when events after the asked seq are no longer kept: the seq of the first one replayed. */
  firstSeq?: number;
}

export class EventRings {
  private readonly rings = new Map<string, Ring>();
  private bytes = 0;
  private events = 0;

  /** Numbers the session's next event; `line(seq)` makes its line, which is kept and returned. */
  record(sid: string, line: (seq: number) => EventLine): EventLine {
    const ring = this.touch(sid);
    const text = line(++ring.lastSeq);
    ring.lines.push(text);
    ring.bytes += text.length;
    this.bytes += text.length;
    while (ring.lines.length - ring.head > EVENTS_PER_SESSION || (ring.bytes > BYTES_PER_SESSION && ring.lines.length - ring.head > 1)) this.dropOldest(ring);
    if (ring.head > EVENTS_PER_SESSION) {
      ring.lines = ring.lines.slice(ring.head);
      ring.head = 0;
    }
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
    const kept = ring.lines.length - ring.head;
    const oldest = ring.lastSeq - kept + 1;
    // A client ahead of the daemon (it counted with a daemon that has since restarted) gets everything kept.
    const from = afterSeq > ring.lastSeq ? oldest : Math.max(afterSeq + 1, oldest);
    const lines = ring.lines.slice(ring.head + (from - oldest));
    const complete = afterSeq <= ring.lastSeq && afterSeq + 1 >= oldest;
    return complete ? { lastSeq: ring.lastSeq, lines } : { lastSeq: ring.lastSeq, lines, firstSeq: from };
  }

  /** Stamps the ring's activity instead of moving it to the map's end: a delete and set per event made 6% of the daemon's garbage. */
  private touch(sid: string): Ring {
    let ring = this.rings.get(sid);
    if (ring === undefined) {
      ring = { lastSeq: 0, lines: [], head: 0, bytes: 0, lastActive: 0 };
      this.rings.set(sid, ring);
    }
    ring.lastActive = ++this.events;
    return ring;
  }

  private dropOldest(ring: Ring): void {
    const text = ring.lines[ring.head]!;
    ring.lines[ring.head] = '';
    ring.head++;
    ring.bytes -= text.length;
    this.bytes -= text.length;
  }

  /** Drops the kept events of the least recently active sessions (their seq counters stay). */
  private evictIdle(current: string): void {
    const leastRecentFirst = [...this.rings].sort(([, a], [, b]) => a.lastActive - b.lastActive);
    for (const [sid, ring] of leastRecentFirst) {
      if (this.bytes <= BYTES_IN_ALL) return;
      if (sid === current) continue;
      while (ring.lines.length - ring.head > 0) this.dropOldest(ring);
      ring.lines = [];
      ring.head = 0;
    }
  }
}
