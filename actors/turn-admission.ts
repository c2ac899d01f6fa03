// At most `workers` turns run at once; the others wait in arrival order. Owned by the host actor.
import type { TurnTicket } from './messages.js';

export class TurnAdmission {
  private readonly waiting: TurnTicket[] = [];
  private readonly running = new Set<number>();

  constructor(readonly workers: number) {}

  get activeTurns(): number {
    return this.running.size;
  }

  get queuedTurns(): number {
    return this.waiting.length;
  }

  /** Returns the ticket if it may start now; otherwise it waits its turn. */
  admit(ticket: TurnTicket): TurnTicket | undefined {
    if (this.running.size < this.workers) {
      this.running.add(ticket.id);
      return ticket;
    }
    this.waiting.push(ticket);
    return undefined;
  }

  /**
   * A ticket's turn ended, or will never start. Unknown ids are ignored: a withdraw can race
   * the grant it cancels, and the session then releases the stale grant as well.
   * Returns the next ticket allowed to start, if any.
   */
  release(ticketId: number): TurnTicket | undefined {
    const queued = this.waiting.findIndex((t) => t.id === ticketId);
    if (queued !== -1) {
      this.waiting.splice(queued, 1);
      return undefined;
    }
    if (!this.running.delete(ticketId)) return undefined;
    const next = this.waiting.shift();
    if (next !== undefined) this.running.add(next.id);
    return next;
  }

  /** Admission closes: every waiting ticket is handed back, none will start. */
  drainWaiting(): TurnTicket[] {
    return this.waiting.splice(0);
  }
}
