// Texts steered into one turn (PROTOCOL.md §2.1). The session actor adds them; the agent takes
// them through its turn context, each taken text becoming a user message where it was taken. A
// steered text stays in the queue table (marked steered) until the message it became is
// committed, so a host that dies in between puts it back at the head of the queue.
import type { QueuedPrompt } from '../../persistence/store-writer.js';

export class SteeringInbox {
  private waiting: QueuedPrompt[] = [];
  /** Taken by the agent, not yet committed with the turn's messages. */
  private taken: QueuedPrompt[] = [];
  private wake: (() => void)[] = [];

  add(item: QueuedPrompt): void {
    this.waiting.push(item);
    for (const wake of this.wake.splice(0)) wake();
  }

  /** The texts not yet taken, in order; they count as taken from now on. */
  take(): QueuedPrompt[] {
    const items = this.waiting.splice(0);
    this.taken.push(...items);
    return items;
  }

  /** Resolves once a text is waiting, after `ms`, or on abort, whichever is first. */
  arrival(ms: number, signal: AbortSignal): Promise<void> {
    if (this.waiting.length > 0 || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      this.wake.push(done);
    });
  }

  /** Taken texts whose messages a commit is about to store: their queue rows go in the same transaction. */
  takenSoFar(): readonly QueuedPrompt[] {
    return this.taken.slice();
  }

  /** The first `count` taken texts were committed. */
  committed(count: number): void {
    this.taken.splice(0, count);
  }

  /** What the turn never stored (untaken, or taken but not committed): back to the queue's head. */
  leftover(): QueuedPrompt[] {
    const items = [...this.taken, ...this.waiting];
    this.taken = [];
    this.waiting = [];
    return items;
  }

  /** An interrupt's stop drops the texts not taken yet (those taken are part of the turn); answers them. */
  drop(): QueuedPrompt[] {
    return this.waiting.splice(0);
  }

  /** Whether `turnId` is the id a waiting text was submitted under. */
  holds(turnId: string): boolean {
    return this.waiting.some((item) => item.turnId === turnId);
  }
}
