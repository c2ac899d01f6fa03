// The daemon's scheduler (PROTOCOL.md §8.1): it sleeps until the earliest planned fire (looking at
// the store at least every second, for schedules made elsewhere), claims each due fire, submits
// its prompt with the client_message_id `schedule:<id>:<planned time>`, then moves the schedule on.
// A crash between any two steps fires it again with the same id, which the session has seen: each
// planned fire runs at most once. On several nodes one claims each fire; a node whose host does
// not own the session lets the claim go at once, for the node that does.
import type { Logger } from 'pino';
import type { ScheduleRow } from '../../persistence/schedules.js';
import type { SideStore } from '../../persistence/side-store.js';
import { ErrorCodes, RpcError } from '../../protocol/client-rpc.js';
import { isRecord } from '../../protocol/fields.js';
import { nextAfter } from './schedule-plan.js';
import { WakeLoop } from './wake-loop.js';

/** The longest sleep: a schedule made on another node (or by a CLI on the store) is seen within it. */
const LOOK_EVERY_MS = 1000;
/** A claim outlives a node that dies holding it by this long; then another node takes the fire. */
const CLAIM_HOLD_MS = 10_000;
/** A fire planned this long before it is looked at was missed (turnhost was down): `catch_up` decides. */
const MISSED_AFTER_MS = 2000;

/** What submitting a fire came to. */
export type FireOutcome = { kind: 'submitted'; turnId: string | null } | { kind: 'refused'; message: string } | { kind: 'elsewhere' };

export interface SchedulerOptions {
  side(): Promise<SideStore | null>;
  /** Submits the fire's prompt to the session, as a client would. */
  submit(row: ScheduleRow, clientMessageId: string): Promise<FireOutcome>;
  /** This node's name in a claim. */
  node: string;
  log: Logger;
  /** Between a fire's submit and its schedule's advance: where a test stops the daemon (actors/stop-points.ts). */
  submitted?(): void;
}

export class Scheduler {
  private readonly loop = new WakeLoop(() => this.look());

  constructor(private readonly options: SchedulerOptions) {}

  start(): void {
    this.loop.wake();
  }

  /** Looks now: a schedule made here may be due sooner than the sleep. */
  wake(): void {
    this.loop.wake();
  }

  close(): Promise<void> {
    return this.loop.close();
  }

  /** Fires what is due; sleeps until the next planned fire, at most a second. */
  private async look(): Promise<number> {
    try {
      const side = await this.options.side();
      if (side === null) return LOOK_EVERY_MS;
      for (const row of await side.schedules.due(Date.now())) await this.fireDue(side, row);
      const next = await side.schedules.nextDue();
      return next === null ? LOOK_EVERY_MS : Math.max(0, Math.min(LOOK_EVERY_MS, next - Date.now()));
    } catch (err) {
      this.options.log.warn({ why: (err as Error).message }, 'schedules: a fire could not be made now (the store or the host failed); trying again in a second');
      return LOOK_EVERY_MS;
    }
  }

  private async fireDue(side: SideStore, row: ScheduleRow): Promise<void> {
    const planned = row.next_at!;
    const now = Date.now();
    if (!(await side.schedules.claim(row.schedule_id, planned, this.options.node, now, CLAIM_HOLD_MS))) return;
    const next = nextAfter(row, Math.max(planned, now), row.created_at);
    const missed = now - planned > MISSED_AFTER_MS;
    const { log } = this.options;
    if (missed && row.catch_up === 'none') {
      await side.schedules.advance(row.schedule_id, planned, next, skipNote(now, 'missed while turnhost was down (catch_up none)'));
      // Said once it is recorded, as a refusal is: whoever reads the line then finds the skip in the schedule.
      log.info({ schedule: row.schedule_id, planned: iso(planned) }, 'schedule: a fire missed while turnhost was down is skipped (catch_up none)');
      return;
    }
    const outcome = await this.options.submit(row, `schedule:${row.schedule_id}:${iso(planned)}`).catch(async (err: unknown) => {
      // Tried again at the next look, under the same id: if this one reached the session after all, that one is a duplicate.
      await side.schedules.release(row.schedule_id, this.options.node);
      throw err;
    });
    if (outcome.kind === 'elsewhere') {
      await side.schedules.release(row.schedule_id, this.options.node);
      return;
    }
    if (outcome.kind === 'submitted') log.info({ schedule: row.schedule_id, planned: iso(planned), turnId: outcome.turnId, caughtUp: missed }, 'schedule fired');
    this.options.submitted?.();
    await side.schedules.advance(row.schedule_id, planned, next, outcome.kind === 'refused' ? skipNote(now, outcome.message) : null);
    // Said once it is recorded: whoever reads the log line then finds the skip in the schedule.
    if (outcome.kind === 'refused') log.warn({ schedule: row.schedule_id, planned: iso(planned), why: outcome.message }, 'schedule: the fire was refused and is skipped');
  }
}

/** Failures that another try of the same fire may get past: the host is down or stopping, or the store failed. */
const TRANSIENT: ReadonlySet<number> = new Set([ErrorCodes.hostUnavailable, ErrorCodes.shuttingDown, ErrorCodes.internal]);

/**
 * How a submit's failure reads for the scheduler: a session another node owns; a refusal that
 * would be the same next time (busy with on_busy reject, a maker who lost the session), which
 * skips the fire; anything else is thrown, and the fire is let go and tried again at the next look.
 */
export function fireOutcomeOf(err: unknown): FireOutcome {
  if (!(err instanceof RpcError) || TRANSIENT.has(err.code)) throw err;
  if (err.code === ErrorCodes.sessionBusy && isRecord(err.data) && typeof err.data['node_id'] === 'string') return { kind: 'elsewhere' };
  return { kind: 'refused', message: err.message };
}

/** A skipped fire as `last_skip` says it: when, and why (a budget's 4029, a busy session's refusal). */
function skipNote(now: number, why: string): string {
  return `${iso(now)} ${why}`;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
