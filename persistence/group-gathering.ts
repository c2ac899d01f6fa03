// Units of work waiting for their group's transaction, and when a group is ready. Units of one
// burst of frames reach the queue over a few event-loop turns, so a group is ready once the queue
// has not grown for IDLE_LOOKS_BEFORE_COMMIT turns of the loop, or GROUP_WAIT_MS after its first
// unit. A lone writer pays two idle loop turns (microseconds). Both stores gather this way; each
// commits a group its own way.
import type { Work } from './store.js';

/** The longest a unit waits for company before its group is committed. */
export const GROUP_WAIT_MS = 1;
/** One idle look commits groups that are still filling (measured: groups of ~5 units, not ~40). */
const IDLE_LOOKS_BEFORE_COMMIT = 2;

export interface Unit {
  work: Work;
  resolve: () => void;
  reject: (err: Error) => void;
}

export class GroupGathering {
  private queue: Unit[] = [];
  private scheduled = false;
  private queuedAtLastLook = 0;
  private idleLooks = 0;
  private firstQueuedMs = 0;

  private readonly look = (): void => {
    this.idleLooks = this.queue.length > this.queuedAtLastLook ? 0 : this.idleLooks + 1;
    if (this.idleLooks < IDLE_LOOKS_BEFORE_COMMIT && performance.now() - this.firstQueuedMs < GROUP_WAIT_MS) {
      this.queuedAtLastLook = this.queue.length;
      setImmediate(this.look);
      return;
    }
    this.scheduled = false;
    this.ready();
  };

  /** `ready` is told when a group has gathered; it takes it with `take()`, now or later. */
  constructor(private readonly ready: () => void) {}

  get length(): number {
    return this.queue.length;
  }

  /** Queues a unit; resolves once the transaction holding it has committed. */
  add(work: Work): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ work, resolve, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      this.queuedAtLastLook = this.queue.length;
      this.idleLooks = 0;
      this.firstQueuedMs = performance.now();
      setImmediate(this.look);
    });
  }

  /** Everything queued, oldest first; the queue is empty after. */
  take(): Unit[] {
    const batch = this.queue;
    this.queue = [];
    return batch;
  }
}
