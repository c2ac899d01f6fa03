// Schedules in a SQLite home (persistence/schedules.ts), on the side connection.
import type Database from 'better-sqlite3';
import type { ScheduleRow, Schedules } from '../schedules.js';
import { ADVANCE_SQL, SCHEDULE_COLUMNS, SCHEDULE_READ_COLUMNS } from '../schedules.js';

export class SqliteSchedules implements Schedules {
  constructor(private readonly db: Database.Database) {}

  async create(row: ScheduleRow): Promise<void> {
    this.db
      .prepare(`INSERT INTO schedules (${SCHEDULE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
      .run(row.schedule_id, row.sid, row.text, row.kind, row.spec, row.tz, row.catch_up, row.on_busy, row.next_at, row.last_at, row.fires, row.created_by, row.created_at, row.content);
  }

  async list(sid?: string): Promise<ScheduleRow[]> {
    const where = sid === undefined ? '' : 'WHERE sid = ?';
    return this.db.prepare(`SELECT ${SCHEDULE_READ_COLUMNS} FROM schedules ${where} ORDER BY created_at, schedule_id`).all(...(sid === undefined ? [] : [sid])) as ScheduleRow[];
  }

  async get(scheduleId: string): Promise<ScheduleRow | undefined> {
    return this.db.prepare(`SELECT ${SCHEDULE_READ_COLUMNS} FROM schedules WHERE schedule_id = ?`).get(scheduleId) as ScheduleRow | undefined;
  }

  async delete(scheduleId: string): Promise<boolean> {
    return this.db.prepare('DELETE FROM schedules WHERE schedule_id = ?').run(scheduleId).changes === 1;
  }

  async due(nowMs: number): Promise<ScheduleRow[]> {
    return this.db
      .prepare(`SELECT ${SCHEDULE_READ_COLUMNS} FROM schedules WHERE next_at <= ? AND (claim_until IS NULL OR claim_until < ?) ORDER BY next_at`)
      .all(nowMs, nowMs) as ScheduleRow[];
  }

  async nextDue(): Promise<number | null> {
    return (this.db.prepare('SELECT min(max(next_at, coalesce(claim_until, 0))) AS next FROM schedules').get() as { next: number | null }).next;
  }

  async claim(scheduleId: string, plannedAt: number, node: string, nowMs: number, holdMs: number): Promise<boolean> {
    const claimed = this.db
      .prepare('UPDATE schedules SET claimed_by = ?, claim_until = ? WHERE schedule_id = ? AND next_at = ? AND (claim_until IS NULL OR claim_until < ?)')
      .run(node, nowMs + holdMs, scheduleId, plannedAt, nowMs);
    return claimed.changes === 1;
  }

  async advance(scheduleId: string, plannedAt: number, nextAt: number | null, skipped: string | null): Promise<void> {
    this.db.prepare(ADVANCE_SQL).run({ 1: nextAt, 2: skipped === null ? 1 : 0, 3: plannedAt, 4: scheduleId, 5: skipped });
  }

  async release(scheduleId: string, node: string): Promise<void> {
    this.db.prepare('UPDATE schedules SET claimed_by = NULL, claim_until = NULL WHERE schedule_id = ? AND claimed_by = ?').run(scheduleId, node);
  }
}
