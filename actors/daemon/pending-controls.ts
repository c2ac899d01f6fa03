// Replies the supervisor is waiting for from the host, and the late handlers that take over
// when a waiter times out. Exactly once: an ack reaches its waiter, or, after the timeout, its
// late handler, never both and never neither; the supervisor actor's mailbox orders the ack
// and the timeout, and each of them removes what it consumes.

export const LATE_TTL_MS = 1_800_000;
export const LATE_MAX = 64;

export interface Late<E> {
  entry: E;
  since: number;
}

export class PendingControls<E> {
  private readonly waiting = new Map<string, E>();
  private readonly late = new Map<string, Late<E>>();

  constructor(
    private readonly now: () => number,
    private readonly ttlMs = LATE_TTL_MS,
    private readonly max = LATE_MAX,
  ) {}

  get size(): number {
    return this.waiting.size;
  }

  get lateSize(): number {
    return this.late.size;
  }

  wait(requestId: string, entry: E): void {
    this.waiting.set(requestId, entry);
  }

  /** The reply arrived: to its waiter, else to its late handler (once), else it is nobody's. */
  settle(requestId: string): { to: 'waiter' | 'late'; entry: E } | null {
    const waiter = this.waiting.get(requestId);
    if (waiter !== undefined) {
      this.waiting.delete(requestId);
      return { to: 'waiter', entry: waiter };
    }
    const late = this.late.get(requestId);
    if (late !== undefined) {
      this.late.delete(requestId);
      return { to: 'late', entry: late.entry };
    }
    return null;
  }

  /** The waiter timed out: its entry moves to the late handlers. Null when the reply won the race. */
  expire(requestId: string): E | null {
    const entry = this.waiting.get(requestId);
    if (entry === undefined) return null;
    this.waiting.delete(requestId);
    this.evict();
    this.late.set(requestId, { entry, since: this.now() });
    return entry;
  }

  /** The host is gone: every waiter and every late handler, handed over once and forgotten. */
  failAll(): { waiting: E[]; late: E[] } {
    const waiting = [...this.waiting.values()];
    const late = [...this.late.values()].map((l) => l.entry);
    this.waiting.clear();
    this.late.clear();
    return { waiting, late };
  }

  /** Drops handlers past their TTL, then the oldest while at capacity (Map keeps insertion order). */
  private evict(): void {
    const now = this.now();
    for (const [id, late] of this.late) if (now - late.since > this.ttlMs) this.late.delete(id);
    while (this.late.size >= this.max) {
      const oldest = this.late.keys().next().value as string;
      this.late.delete(oldest);
    }
  }
}
