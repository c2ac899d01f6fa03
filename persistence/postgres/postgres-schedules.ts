// Schedules in PostgreSQL (persistence/schedules.ts), on the side pool: every node reads the same,
// and a claim is one conditional UPDATE, so one node takes each planned fire.
import type { ScheduleRow, Schedules } from '../schedules.js';
import { ADVANCE_SQL, SCHEDULE_COLUMNS, SCHEDULE_READ_COLUMNS } from '../schedules.js';
import type { SideQuery } from './side-query.js';

export class PostgresSchedules implements Schedules {
  constructor(private readonly rows: SideQuery) {}

  async create(row: ScheduleRow): Promise<void> {
    await this.rows(`INSERT INTO schedules (${SCHEDULE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`, [
      row.schedule_id, row.sid, row.text, row.kind, row.spec, row.tz, row.catch_up, row.on_busy, row.next_at, row.last_at, row.fires, row.created_by, row.created_at, row.content,
    ]);
  }

  async list(sid?: string): Promise<ScheduleRow[]> {
    const where = sid === undefined ? '' : 'WHERE sid = $1';
    return (await this.rows<ScheduleRow>(`SELECT ${SCHEDULE_READ_COLUMNS} FROM schedules ${where} ORDER BY created_at, schedule_id`, sid === undefined ? [] : [sid])).rows;
  }

  async get(scheduleId: string): Promise<ScheduleRow | undefined> {
    return (await this.rows<ScheduleRow>(`SELECT ${SCHEDULE_READ_COLUMNS} FROM schedules WHERE schedule_id = $1`, [scheduleId])).rows[0];
  }

  async delete(scheduleId: string): Promise<boolean> {
    return (await this.rows('DELETE FROM schedules WHERE schedule_id = $1', [scheduleId])).rowCount === 1;
  }

  async due(nowMs: number): Promise<ScheduleRow[]> {
    return (await this.rows<ScheduleRow>(`SELECT ${SCHEDULE_READ_COLUMNS} FROM schedules WHERE next_at <= $1 AND (claim_until IS NULL OR claim_until < $1) ORDER BY next_at`, [nowMs])).rows;
  }

  async nextDue(): Promise<number | null> {
    return (await this.rows<{ next: number | null }>('SELECT min(greatest(next_at, coalesce(claim_until, 0))) AS next FROM schedules')).rows[0]?.next ?? null;
  }

  async claim(scheduleId: string, plannedAt: number, node: string, nowMs: number, holdMs: number): Promise<boolean> {
    const claimed = await this.rows(
      'UPDATE schedules SET claimed_by = $1, claim_until = $2 WHERE schedule_id = $3 AND next_at = $4 AND (claim_until IS NULL OR claim_until < $5)',
      [node, nowMs + holdMs, scheduleId, plannedAt, nowMs],
    );
    return claimed.rowCount === 1;
  }

  async advance(scheduleId: string, plannedAt: number, nextAt: number | null, skipped: string | null): Promise<void> {
    await this.rows(ADVANCE_SQL, [nextAt, skipped === null ? 1 : 0, plannedAt, scheduleId, skipped]);
  }

  async release(scheduleId: string, node: string): Promise<void> {
    await this.rows('UPDATE schedules SET claimed_by = NULL, claim_until = NULL WHERE schedule_id = $1 AND claimed_by = $2', [scheduleId, node]);
  }
}
