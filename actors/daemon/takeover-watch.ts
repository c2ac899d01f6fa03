// A dead node's session, followed by a client of this node, is taken over here as soon as its
// lease expires (PROTOCOL.md §6.2), without waiting for that client's next call: the host
// recovers it as after a local crash, and the client, attached here, sees the lost turn end
// (`node_lost`) and the queue go on as events on the connection it already has. The watch
// reads the lease, sleeps until it would expire, and reads it again; a holder that keeps
// renewing it is alive, and the watch gives up once it has outlived a few leases.
import type { Logger } from 'pino';
import type { LeaseView } from '../../persistence/reader.js';
import { SECOND_MS } from '../runtime.js';

export interface TakeoverWiring {
  /** The session's lease as the store has it now; null when no node holds one. */
  lease(sid: string): Promise<LeaseView | null>;
  /** Makes this node's host load the session, taking its lease (and recovering it, when it was a dead node's). */
  take(sid: string): void;
  leaseSecs: number;
  log: Logger;
}

/** A read of the lease lands this long after the expiry it waits for: the database's clock decides. */
const AFTER_EXPIRY_MS = 50;
/** A store that cannot be read is asked again this often. */
const RETRY_MS = SECOND_MS;

export class TakeoverWatch {
  private readonly watched = new Set<string>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private closed = false;

  constructor(private readonly wiring: TakeoverWiring) {}

  /** A client follows the session on this node: take it over once no live node holds it. */
  watch(sid: string): void {
    if (this.closed || this.watched.has(sid)) return;
    this.watched.add(sid);
    // Long enough for a lease that was just renewed to expire twice over, and no longer: a holder
    // still renewing it by then is alive (its link failed for another reason).
    const giveUpAt = Date.now() + 3 * this.wiring.leaseSecs * SECOND_MS;
    void this.look(sid, giveUpAt);
  }

  close(): void {
    this.closed = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    this.watched.clear();
  }

  private async look(sid: string, giveUpAt: number): Promise<void> {
    let waitMs: number;
    try {
      const lease = await this.wiring.lease(sid);
      if (lease === null || lease.expires_in_ms === 0) {
        // Loading a session this node's host already holds changes nothing: its queue goes on.
        this.wiring.log.info({ sid, from: lease?.node_id ?? null }, 'taking over a session whose lease is free');
        this.wiring.take(sid);
        this.watched.delete(sid);
        return;
      }
      waitMs = lease.expires_in_ms + AFTER_EXPIRY_MS;
    } catch {
      waitMs = RETRY_MS;
    }
    if (this.closed) return;
    if (Date.now() + waitMs > giveUpAt) {
      this.watched.delete(sid);
      return;
    }
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      void this.look(sid, giveUpAt);
    }, waitMs);
    timer.unref();
    this.timers.add(timer);
  }
}
