// At most `workers` turns run at once; the others wait in arrival order. Owned by the host actor.
import type { ArrivalTicket, TurnTicket } from './messages.js';

let lastTicketId = 0;

/** Ticket ids are unique in the process: sessions and the host both draw from here. */
export function nextTicketId(): number {
  return ++lastTicketId;
}

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

  /**
   * A slot for a turn.start on its way to its session, when one is free and nobody waits:
   * the session then starts at once instead of asking (two messages fewer per turn). A session
   * that cannot use it releases it.
   */
  arrive(): ArrivalTicket {
    const id = nextTicketId();
    if (this.waiting.length > 0 || this.running.size >= this.workers) return { id, reserved: false };
    this.running.add(id);
    return { id, reserved: true };
  }

  /** Returns the ticket if it may start now; otherwise it waits its turn, behind the tickets that arrived before it. */
  admit(ticket: TurnTicket): TurnTicket | undefined {
    if (this.running.size < this.workers) {
      this.running.add(ticket.id);
      return ticket;
    }
    const behind = this.waiting.findIndex((t) => t.id > ticket.id);
    if (behind === -1) this.waiting.push(ticket);
    else this.waiting.splice(behind, 0, ticket);
    return undefined;
  }

  /** During a shutdown: a turn accepted before it may still start, but only on a free worker. */
  admitIfFree(ticket: TurnTicket): boolean {
    if (this.running.size >= this.workers) return false;
    this.running.add(ticket.id);
    return true;
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
