// Read-only access to a home's database, for the CLI and the supervisor. WAL lets these reads
// run while the host writes; nothing here ever writes.
import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';
import type { SessionStatus } from './store.js';

/** One row of `turnhost sessions --json` (PROTOCOL.md §3). */
export interface SessionSummary {
  session_id: string;
  session_key: string;
  status: SessionStatus;
  end_reason: string | null;
  retained_reason: string | null;
  message_count: number;
  history_version: number;
  updated_at: string;
}

/** One row of `turnhost history ID --json`. */
export interface HistoryEntry {
  seq: number;
  role: string;
  content: string;
  turn_id: string | null;
}

export const SESSION_STATUSES: readonly SessionStatus[] = ['active', 'finalized', 'retained'];

const SUMMARY_COLUMNS = `sid, session_key, status, end_reason, retained_reason, history_version, updated_at,
  (SELECT count(*) FROM messages WHERE messages.sid = sessions.sid) AS message_count`;

/** A summary as stored: the sid and the time in their column form. */
type SessionRow = Omit<SessionSummary, 'session_id' | 'updated_at'> & { sid: string; updated_at: number };

export class Reader {
  private constructor(readonly db: Database.Database) {}

  /** Null when the home has no database yet, or the host has created the file but not its schema. */
  static open(file: string): Reader | null {
    if (!existsSync(file)) return null;
    const db = new Database(file, { readonly: true, fileMustExist: true });
    db.pragma('busy_timeout = 5000');
    if ((db.pragma('user_version', { simple: true }) as number) === 0) {
      db.close();
      return null;
    }
    return new Reader(db);
  }

  sessions(status?: SessionStatus): SessionSummary[] {
    const sql = `SELECT ${SUMMARY_COLUMNS} FROM sessions ${status ? 'WHERE status = ?' : ''} ORDER BY updated_at, sid`;
    const rows = (status ? this.db.prepare(sql).all(status) : this.db.prepare(sql).all()) as SessionRow[];
    return rows.map(toSummary);
  }

  session(sid: string): SessionSummary | undefined {
    const row = this.db
      .prepare(`SELECT ${SUMMARY_COLUMNS} FROM sessions WHERE sid = ?`)
      .get(sid) as SessionRow | undefined;
    return row && toSummary(row);
  }

  statusCounts(): Record<SessionStatus, number> {
    const counts: Record<SessionStatus, number> = { active: 0, finalized: 0, retained: 0 };
    const rows = this.db.prepare('SELECT status, count(*) AS n FROM sessions GROUP BY status').all() as { status: SessionStatus; n: number }[];
    for (const row of rows) counts[row.status] = row.n;
    return counts;
  }

  /** The session's messages, oldest first (the last `limit` when given); undefined for an unknown session. */
  history(sid: string, limit?: number): HistoryEntry[] | undefined {
    if (this.session(sid) === undefined) return undefined;
    if (limit === undefined) {
      return this.db.prepare('SELECT seq, role, content, turn_id FROM messages WHERE sid = ? ORDER BY seq').all(sid) as HistoryEntry[];
    }
    const newest = this.db
      .prepare('SELECT seq, role, content, turn_id FROM messages WHERE sid = ? ORDER BY seq DESC LIMIT ?')
      .all(sid, limit) as HistoryEntry[];
    return newest.reverse();
  }

  close(): void {
    this.db.close();
  }
}

function toSummary(row: SessionRow): SessionSummary {
  return {
    session_id: row.sid,
    session_key: row.session_key,
    status: row.status,
    end_reason: row.end_reason,
    retained_reason: row.retained_reason,
    message_count: row.message_count,
    history_version: row.history_version,
    updated_at: new Date(row.updated_at).toISOString(),
  };
}
