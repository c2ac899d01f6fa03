// Schedules (PROTOCOL.md §8.1) as the store keeps them, beside the sessions: written by the daemon
// on the store's side connection (side-store.ts). A planned fire is claimed by one node at a time
// (`claimed_by` until `claim_until`), submitted with a client_message_id of its own, then the
// schedule is moved on to its next planned time: a crash anywhere in between fires it again with
// the same id, which the session has seen, so it runs at most once.

export type ScheduleKind = 'cron' | 'every' | 'at';
export const CATCH_UP = ['one', 'none'] as const;
export type CatchUp = (typeof CATCH_UP)[number];
export const SCHEDULE_ON_BUSY = ['queue', 'reject'] as const;
export type ScheduleOnBusy = (typeof SCHEDULE_ON_BUSY)[number];

export interface ScheduleRow {
  schedule_id: string;
  sid: string;
  text: string;
  kind: ScheduleKind;
  /** The cron expression, the seconds between fires, or the ISO time. */
  spec: string;
  tz: string;
  catch_up: CatchUp;
  on_busy: ScheduleOnBusy;
  /** The next planned fire (epoch ms); null once an `at` has fired. */
  next_at: number | null;
  last_at: number | null;
  fires: number;
  created_by: string;
  created_at: number;
}

export interface Schedules {
  create(row: ScheduleRow): Promise<void>;
  /** Every schedule, or one session's. */
  list(sid?: string): Promise<ScheduleRow[]>;
  get(scheduleId: string): Promise<ScheduleRow | undefined>;
  delete(scheduleId: string): Promise<boolean>;
  /** The schedules whose next planned fire is due at `nowMs`, oldest first, that no live claim holds. */
  due(nowMs: number): Promise<ScheduleRow[]>;
  /** When to look again: the earliest planned fire, or the end of its claim when another holds it; null when none. */
  nextDue(): Promise<number | null>;
  /** This node takes the fire planned at `plannedAt` for `holdMs`; false when another holds it or it moved on. */
  claim(scheduleId: string, plannedAt: number, node: string, nowMs: number, holdMs: number): Promise<boolean>;
  /** The fire planned at `plannedAt` is done (or skipped: `fired` false): on to `nextAt`, the claim let go. */
  advance(scheduleId: string, plannedAt: number, nextAt: number | null, fired: boolean): Promise<void>;
  /** A claim let go without firing (the session is another node's): another node may take it at once. */
  release(scheduleId: string, node: string): Promise<void>;
}

export const SCHEDULE_COLUMNS = 'schedule_id, sid, text, kind, spec, tz, catch_up, on_busy, next_at, last_at, fires, created_by, created_at';
