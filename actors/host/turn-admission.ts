// At most `workers` turns run at once (PROTOCOL.md §5.7). When more wait, the next worker goes to
// the person with the fewest turns running; ties to the person who has waited longest: since their
// oldest waiting turn arrived, or since a turn of theirs last started, whichever is later (a
// person with a backlog takes their place at the back each time one of theirs starts: round robin,
// not oldest turn first, which would hold a newcomer behind every old backlog). A person's own
// turns start in the order they arrived. With `maxPerPerson`, a person at the cap waits whatever is
// free. Owned by the host actor.
//
// Nothing starves: once a person has no turn running, each release that passes them over starts a
// turn of someone else with none running who waited longer, and that person then waited less; so
// their oldest waiting turn starts within P releases, P the persons waiting.
import { OWNER } from '../../persistence/people.js';
import type { ArrivalTicket, TurnTicket } from './messages.js';

/** Whose a turn is: who sent it (`by`), else the home's owner. */
export function personOf(by: string | null | undefined): string {
  return by ?? OWNER;
}

let lastTicketId = 0;

/** Ticket ids are unique in the process: sessions and the host both draw from here. */
export function nextTicketId(): number {
  return ++lastTicketId;
}

export class TurnAdmission {
  /** Each person's waiting tickets, oldest (smallest id) first. */
  private readonly waiting = new Map<string, TurnTicket[]>();
  /** Whose each waiting ticket is. */
  private readonly waitingOf = new Map<number, string>();
  /** The running tickets, with whose they are. */
  private readonly running = new Map<number, string>();
  private readonly runningPer = new Map<string, number>();
  /** When a turn of a person with turns still waiting last started (a ticket id's clock). */
  private readonly lastStarted = new Map<string, number>();

  constructor(
    readonly workers: number,
    /** At most this many turns of one person run at once; Infinity: no cap. */
    readonly maxPerPerson = Infinity,
  ) {}

  get activeTurns(): number {
    return this.running.size;
  }

  get queuedTurns(): number {
    return this.waitingOf.size;
  }

  /**
   * A slot for a turn.start on its way to its session, when one is free and nobody waits:
   * the session then starts at once instead of asking (two messages fewer per turn). A session
   * that cannot use it releases it.
   */
  arrive(person: string): ArrivalTicket {
    const id = nextTicketId();
    if (this.waitingOf.size > 0 || !this.mayRun(person)) return { id, reserved: false };
    this.start(id, person);
    return { id, reserved: true };
  }

  /** The tickets that may start now: this one, or none while it waits for its turn. */
  admit(ticket: TurnTicket): TurnTicket[] {
    if (this.waitingOf.size === 0 && this.mayRun(ticket.person)) {
      this.start(ticket.id, ticket.person);
      return [ticket];
    }
    const queue = this.waiting.get(ticket.person) ?? [];
    const behind = queue.findIndex((t) => t.id > ticket.id);
    if (behind === -1) queue.push(ticket);
    else queue.splice(behind, 0, ticket);
    this.waiting.set(ticket.person, queue);
    this.waitingOf.set(ticket.id, ticket.person);
    // A ticket of a person under the cap may start beside the others held at theirs.
    return this.startable();
  }

  /** During a shutdown: a turn accepted before it may still start, but only on a free worker. */
  admitIfFree(ticket: TurnTicket): boolean {
    if (!this.mayRun(ticket.person)) return false;
    this.start(ticket.id, ticket.person);
    return true;
  }

  /**
   * A ticket's turn ended, or will never start. Unknown ids are ignored: a withdraw can race
   * the grant it cancels, and the session then releases the stale grant as well.
   * Returns the tickets allowed to start now.
   */
  release(ticketId: number): TurnTicket[] {
    if (this.dropWaiting(ticketId)) return [];
    const person = this.running.get(ticketId);
    if (person === undefined) return [];
    this.running.delete(ticketId);
    const left = (this.runningPer.get(person) ?? 1) - 1;
    if (left === 0) this.runningPer.delete(person);
    else this.runningPer.set(person, left);
    return this.startable();
  }

  /** Admission closes: every waiting ticket is handed back, none will start. */
  drainWaiting(): TurnTicket[] {
    const all = [...this.waiting.values()].flat();
    this.waiting.clear();
    this.waitingOf.clear();
    return all;
  }

  private startable(): TurnTicket[] {
    const granted: TurnTicket[] = [];
    for (let next = this.next(); next !== undefined; next = this.next()) granted.push(next);
    return granted;
  }

  private mayRun(person: string): boolean {
    return this.running.size < this.workers && (this.runningPer.get(person) ?? 0) < this.maxPerPerson;
  }

  private start(id: number, person: string): void {
    this.running.set(id, person);
    this.runningPer.set(person, (this.runningPer.get(person) ?? 0) + 1);
    if (this.waiting.has(person)) this.lastStarted.set(person, nextTicketId());
    else this.lastStarted.delete(person);
  }

  /** The waiting ticket a free worker goes to, started; none when no worker is free or everyone waiting is at the cap. */
  private next(): TurnTicket | undefined {
    if (this.running.size >= this.workers) return undefined;
    let best: TurnTicket | undefined;
    let bestRunning = Infinity;
    let bestSince = Infinity;
    for (const [person, queue] of this.waiting) {
      const running = this.runningPer.get(person) ?? 0;
      if (running >= this.maxPerPerson) continue;
      const since = Math.max(queue[0]!.id, this.lastStarted.get(person) ?? 0);
      if (running < bestRunning || (running === bestRunning && since < bestSince)) {
        best = queue[0];
        bestRunning = running;
        bestSince = since;
      }
    }
    if (best === undefined) return undefined;
    this.dropWaiting(best.id);
    this.start(best.id, best.person);
    return best;
  }

  private dropWaiting(ticketId: number): boolean {
    const person = this.waitingOf.get(ticketId);
    if (person === undefined) return false;
    this.waitingOf.delete(ticketId);
    const queue = this.waiting.get(person)!;
    queue.splice(queue.findIndex((t) => t.id === ticketId), 1);
    if (queue.length === 0) {
      this.waiting.delete(person);
      this.lastStarted.delete(person);
    }
    return true;
  }
}
