// The writer's statements in SQLite, prepared once and run at once inside the store's transaction.
import type Database from 'better-sqlite3';
import { LEDGER_SQL } from '../ledger.js';
import { REWIND_SQL } from '../session-line.js';
import { DELETE_SQL } from '../session-life.js';
import { StoreWriter, type StatementName, type StatementParams } from '../store-writer.js';

const SQL: Record<StatementName, string> = {
  // `activate` is bound three times (SQLite's `?` cannot repeat a parameter): see bindings below.
  upsertSession: `
    INSERT INTO sessions (sid, session_key, status, history_version, overrides, cwd, boot_id, created_at, updated_at, agent)
    VALUES (?, ?, 'active', ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (sid) DO UPDATE SET
      agent = COALESCE(sessions.agent, excluded.agent), archived_at = NULL,
      session_key = excluded.session_key,
      status = CASE WHEN ? THEN 'active' ELSE status END,
      end_reason = CASE WHEN ? THEN NULL ELSE end_reason END,
      retained_reason = CASE WHEN ? THEN NULL ELSE retained_reason END,
      history_version = excluded.history_version,
      overrides = excluded.overrides, cwd = excluded.cwd, boot_id = excluded.boot_id, updated_at = excluded.updated_at`,
  // A prompt brings an archived session back (PROTOCOL.md §2.3): its turn writes the row.
  touchSession: 'UPDATE sessions SET history_version = ?, updated_at = ?, archived_at = NULL WHERE sid = ?',
  insertMessage: 'INSERT INTO messages (sid, seq, role, content, turn_id, created_at, tool_calls, tool_call_id, parts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
  deleteMessagesFrom: 'DELETE FROM messages WHERE sid = ? AND seq >= ?',
  insertTurn: "INSERT INTO turns (turn_id, sid, request_id, status, boot_id, started_at, by_user, trace) VALUES (?, ?, ?, 'running', ?, ?, ?, ?)",
  updateTurn: `
    UPDATE turns SET status = ?, ended_at = ?, error = ?, model = ?, prompt_tokens = ?, completion_tokens = ?,
      cached_tokens = ?, reasoning_tokens = ?, model_calls = ?
    WHERE turn_id = ?`,
  finalizeSession: "UPDATE sessions SET status = 'finalized', end_reason = ?, retained_reason = NULL, updated_at = ? WHERE sid = ?",
  retainSession: "UPDATE sessions SET status = 'retained', retained_reason = ?, end_reason = NULL, updated_at = ? WHERE sid = ?",
  insertBoot: 'INSERT INTO boots (boot_id, pid, started_at) VALUES (?, ?, ?)',
  updateBoot: 'UPDATE boots SET ended_at = ?, end_reason = ? WHERE boot_id = ?',
  insertRequest: `
    INSERT INTO server_requests (id, sid, turn_id, method, params, status, boot_id, created_at)
    VALUES (?, ?, ?, ?, ?, 'open', ?, ?)`,
  updateRequest: 'UPDATE server_requests SET status = ?, answers = ?, reason = ?, resolved_at = ?, answered_by = ? WHERE id = ?',
  insertQueued: `
    INSERT INTO queue (queue_id, sid, position, text, client_message_id, request_id, turn_id, steered, queued_at, by_user, content)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  // An edit is the prompt's new text, whole: files it carried go with the old text.
  updateQueuedText: 'UPDATE queue SET text = ?, content = NULL WHERE queue_id = ?',
  updateQueuedPlace: 'UPDATE queue SET steered = ?, position = ? WHERE queue_id = ?',
  deleteQueued: 'DELETE FROM queue WHERE queue_id = ?',
  deleteQueue: 'DELETE FROM queue WHERE sid = ?',
  updateQueueRevision: 'UPDATE sessions SET queue_revision = ? WHERE sid = ?',
  updateAgentSession: 'UPDATE sessions SET agent_session_id = ? WHERE sid = ?',
  // REPLACE deletes the old row and inserts a new one: the repeated id gets the newest rowid.
  insertSubmit: 'INSERT OR REPLACE INTO submits (sid, client_message_id, turn_id, queue_id, steered) VALUES (?, ?, ?, ?, ?)',
  updateSubmit: 'UPDATE submits SET steered = ? WHERE sid = ? AND client_message_id = ?',
  deleteOldestSubmit: 'DELETE FROM submits WHERE rowid = (SELECT MIN(rowid) FROM submits WHERE sid = ?)',
  insertWebhook: 'INSERT INTO webhook_outbox (sid, type, ref, detail, created_at) VALUES (?, ?, ?, ?, ?)',
  ...REWIND_SQL,
  ...LEDGER_SQL,
  ...DELETE_SQL,
};

function bindings<N extends StatementName>(statement: N, params: StatementParams[N]): readonly unknown[] {
  // The rewind's and the ledger's statements are shared with PostgreSQL: `$n`, bound by number.
  if (statement in REWIND_SQL || statement in LEDGER_SQL || statement in DELETE_SQL) return [Object.fromEntries(params.map((value, i) => [i + 1, value]))];
  if (statement !== 'upsertSession') return params;
  const [sid, sessionKey, activate, historyVersion, overridesText, cwd, bootId, now, agent] = params as StatementParams['upsertSession'];
  return [sid, sessionKey, historyVersion, overridesText, cwd, bootId, now, now, agent, activate, activate, activate];
}

export class SqliteWriter extends StoreWriter {
  private readonly statements: Record<StatementName, Database.Statement>;

  constructor(db: Database.Database) {
    super();
    this.statements = Object.fromEntries(Object.entries(SQL).map(([name, sql]) => [name, db.prepare(sql)])) as Record<StatementName, Database.Statement>;
  }

  protected run<N extends StatementName>(statement: N, params: StatementParams[N]): void {
    this.statements[statement].run(...bindings(statement, params));
  }
}
