// `max_live_guests` (AGENT.md §8): guest sessions live at once across every guest agent of a host,
// beside each agent's own `acp.max_live_sessions`. Past it, the least recently used idle session
// of any agent is released (it loads again at its next turn); busy ones wait for their turns.

/** What the bound needs of one agent's pool. */
export interface SlotHolder {
  readonly liveCount: number;
  /** Its least recently used idle session, and when it was last used; null when none is idle. */
  oldestIdle(): { sid: string; usedAt: number } | null;
  /** Takes the session out of the live ones at once (its guest ends after). */
  release(sid: string): Promise<void>;
}

export class GuestSlots {
  private readonly holders = new Set<SlotHolder>();

  /** `max`: null, no bound across agents (a file of one agent: its own `max_live_sessions` bounds it). */
  constructor(public max: number | null) {}

  /** A pool counts against the bound until the returned function is called. */
  join(holder: SlotHolder): () => void {
    this.holders.add(holder);
    return () => this.holders.delete(holder);
  }

  releaseOverBound(): void {
    if (this.max === null) return;
    let over = [...this.holders].reduce((sum, holder) => sum + holder.liveCount, 0) - this.max;
    while (over > 0) {
      let oldest: { holder: SlotHolder; sid: string; usedAt: number } | null = null;
      for (const holder of this.holders) {
        const idle = holder.oldestIdle();
        if (idle !== null && (oldest === null || idle.usedAt < oldest.usedAt)) oldest = { holder, ...idle };
      }
      if (oldest === null) return;
      void oldest.holder.release(oldest.sid);
      over--;
    }
  }
}
