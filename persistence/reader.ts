// Read-only access to a home's database, for the CLI and the supervisor. WAL lets these reads
// run while the host writes; nothing here ever writes.
import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';
import type { ToolCall } from '../protocol/chat.js';
import type { TurnUsage } from '../protocol/outbound.js';
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

/** One row of `turnhost history ID --json`; the tool fields only on messages that have them. */
export interface HistoryEntry {
  seq: number;
  role: string;
  content: string;
  turn_id: string | null;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  /** On a turn's last assistant message: the model that answered and the turn's usage. */
  model?: string;
  usage?: TurnUsage;
}

interface HistoryRow {
  seq: number;
  role: string;
  content: string;
  turn_id: string | null;
  tool_calls: string | null;
  tool_call_id: string | null;
}

interface TurnUsageRow {
  model: string | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  model_calls: number | null;
}

const HISTORY_COLUMNS = 'seq, role, content, turn_id, tool_calls, tool_call_id';

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

  /** Sessions with prompts waiting in their queue: how many, and since when (the oldest). */
  queues(): { session_id: string; queued: number; oldest: string }[] {
    const rows = this.db
      .prepare('SELECT sid, count(*) AS n, min(queued_at) AS oldest FROM queue WHERE steered = 0 GROUP BY sid ORDER BY sid')
      .all() as { sid: string; n: number; oldest: number }[];
    return rows.map((r) => ({ session_id: r.sid, queued: r.n, oldest: new Date(r.oldest).toISOString() }));
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
    const rows =
      limit === undefined
        ? (this.db.prepare(`SELECT ${HISTORY_COLUMNS} FROM messages WHERE sid = ? ORDER BY seq`).all(sid) as HistoryRow[])
        : (this.db.prepare(`SELECT ${HISTORY_COLUMNS} FROM messages WHERE sid = ? ORDER BY seq DESC LIMIT ?`).all(sid, limit) as HistoryRow[]).reverse();
    return this.withTurnUsage(rows.map(toHistoryEntry));
  }

  /** Each turn's model and usage go on its last assistant message. */
  private withTurnUsage(entries: HistoryEntry[]): HistoryEntry[] {
    const lastAssistant = new Map<string, HistoryEntry>();
    for (const entry of entries) if (entry.role === 'assistant' && entry.turn_id !== null) lastAssistant.set(entry.turn_id, entry);
    if (lastAssistant.size === 0) return entries;
    const select = this.db.prepare('SELECT model, prompt_tokens, completion_tokens, model_calls FROM turns WHERE turn_id = ?');
    for (const [turnId, entry] of lastAssistant) {
      const turn = select.get(turnId) as TurnUsageRow | undefined;
      if (turn?.model) entry.model = turn.model;
      if (turn?.model_calls !== null && turn?.model_calls !== undefined) {
        entry.usage = { prompt_tokens: turn.prompt_tokens ?? 0, completion_tokens: turn.completion_tokens ?? 0, calls: turn.model_calls };
      }
    }
    return entries;
  }

  close(): void {
    this.db.close();
  }
}

function toHistoryEntry(row: HistoryRow): HistoryEntry {
  const entry: HistoryEntry = { seq: row.seq, role: row.role, content: row.content, turn_id: row.turn_id };
  if (row.tool_calls !== null) entry.tool_calls = JSON.parse(row.tool_calls) as ToolCall[];
  if (row.tool_call_id !== null) entry.tool_call_id = row.tool_call_id;
  return entry;
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
