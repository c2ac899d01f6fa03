// What a test helper hands out for something it has not seen yet (a frame, a log line, an
// event): a promise settled when a matching value is offered, or rejected after its bound.

interface Waiter<T> {
  match: (value: T) => boolean;
  resolve: (value: T) => void;
}

export class Waiters<T> {
  private list: Waiter<T>[] = [];

  /** Resolves with the first value offered from now on that matches; rejects with failure() after timeoutMs. */
  wait(match: (value: T) => boolean, timeoutMs: number, failure: () => string): Promise<T> {
    return new Promise((resolve, reject) => {
      const waiter: Waiter<T> = {
        match,
        resolve: (value) => {
          clearTimeout(timer);
          resolve(value);
        },
      };
      const timer = setTimeout(() => {
        this.list = this.list.filter((w) => w !== waiter);
        reject(new Error(failure()));
      }, timeoutMs);
      this.list.push(waiter);
    });
  }

  /**
   * Settles the waiters the value matches: with `one`, only the oldest (a frame is handed to one
   * waiter); otherwise all of them (a condition that now holds). Says whether any matched.
   */
  offer(value: T, how: 'one' | 'all'): boolean {
    const matching = this.list.filter((w) => w.match(value));
    const met = how === 'one' ? matching.slice(0, 1) : matching;
    this.list = this.list.filter((w) => !met.includes(w));
    for (const w of met) w.resolve(value);
    return met.length > 0;
  }
}
