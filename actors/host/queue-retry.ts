// A queued prompt whose start could not be stored (a full disk, a database that stays locked, a
// lost lease) goes back to the head of its queue, and the queue waits before trying it again. It
// used to go on at once: the same start failed again at once, in a loop (measured on a full disk:
// 3,264 turn.errors in two seconds, each one sent on to every client). The wait doubles with each
// failure, up to a minute, and starts over once a queued prompt starts.
import type { SessionMsg } from './messages.js';
import type { Clock } from '../clock.js';
import { tell, SECOND_MS, type Ref } from '../runtime.js';

const FIRST_QUEUE_RETRY_MS = SECOND_MS;
const MAX_QUEUE_RETRY_MS = 60 * SECOND_MS;

/** Owned by the session actor, in its state. */
export class QueueRetry {
  /** Set while the queue waits for its retry: nothing of it starts. */
  private cancelWait: (() => void) | null = null;
  private delayMs = FIRST_QUEUE_RETRY_MS;

  get holding(): boolean {
    return this.cancelWait !== null;
  }

  /** The queue's head failed to start: hold the queue; the session hears `queue-retry` when it may go on. */
  hold(clock: Clock, session: Ref<SessionMsg>): void {
    this.cancelWait?.();
    this.cancelWait = clock.after(this.delayMs, () => tell(session, { kind: 'queue-retry' }));
    this.delayMs = Math.min(this.delayMs * 2, MAX_QUEUE_RETRY_MS);
  }

  /** Hold the queue for `ms` (a budget's reset), whatever the failures before. */
  holdFor(ms: number, clock: Clock, session: Ref<SessionMsg>): void {
    this.cancelWait?.();
    this.cancelWait = clock.after(Math.max(0, ms), () => tell(session, { kind: 'queue-retry' }));
  }

  /** The wait is over (or the session stops): the queue may go on. */
  release(): void {
    this.cancelWait?.();
    this.cancelWait = null;
  }

  /** A queued prompt started: the next failure waits the first delay again. */
  started(): void {
    this.delayMs = FIRST_QUEUE_RETRY_MS;
  }
}
