// A loop that looks at the store, sleeps until the time it names (at most its bound), and can be
// woken sooner: the scheduler's and the webhook delivery's. One look at a time: a wake during a
// look makes one more look right after it, never two at once.

/** One look: how long to sleep before the next (the caller bounds it). It never rejects: it logs what failed and says when to look again. */
export type Look = () => Promise<number>;

export class WakeLoop {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private closed = false;

  constructor(private readonly look: Look) {}

  /** Looks now (or right after the look under way). */
  wake(): void {
    if (this.closed) return;
    if (this.running !== null) {
      this.again = true;
      return;
    }
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.running = this.look()
      .then((sleepMs) => {
        if (!this.closed && !this.again) this.timer = setTimeout(() => this.wake(), sleepMs);
      })
      .finally(() => {
        this.running = null;
        if (this.again) {
          this.again = false;
          this.wake();
        }
      });
  }

  /** No look after this one; resolves once the look under way has ended. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
    await this.running;
  }
}
