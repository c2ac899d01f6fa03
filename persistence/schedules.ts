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
  /** The prompt's text form. */
  text: string;
  /** Its blocks when it carries files (PROTOCOL.md §2.4), as JSON naming blobs the session names; null for text. */
  content: string | null;
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
  /** Fires skipped (missed while down with catch_up none, refused: a budget, a busy session), and the last one's time and why. */
  skips: number;
  last_skip: string | null;
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
  /** The fire planned at `plannedAt` is done, or skipped (`skipped`: when and why): on to `nextAt`, the claim let go. */
  advance(scheduleId: string, plannedAt: number, nextAt: number | null, skipped: string | null): Promise<void>;
  /** A claim let go without firing (the session is another node's): another node may take it at once. */
  release(scheduleId: string, node: string): Promise<void>;
}

export const SCHEDULE_COLUMNS = 'schedule_id, sid, text, kind, spec, tz, catch_up, on_busy, next_at, last_at, fires, created_by, created_at, content';
/** A fire done (`$2` 1) or skipped (`$5`: when and why): on to `$1`, the claim let go; both stores. */
export const ADVANCE_SQL = `UPDATE schedules SET next_at = $1,
  last_at = CASE WHEN $2 = 1 THEN $3 ELSE last_at END, fires = fires + $2,
  skips = skips + 1 - $2, last_skip = COALESCE(CAST($5 AS TEXT), last_skip),
  claimed_by = NULL, claim_until = NULL
  WHERE schedule_id = $4 AND next_at = $3`;
/** What a read gives: the columns a new schedule is made with, and its skips. */
export const SCHEDULE_READ_COLUMNS = `${SCHEDULE_COLUMNS}, skips, last_skip`;
