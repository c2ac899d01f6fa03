// The writer's statements in PostgreSQL. Nothing runs while a unit of work writes: the statements
// are gathered, and the store sends the whole group in one pipelined transaction.
import { LEDGER_SQL } from '../ledger.js';
import { REWIND_SQL } from '../session-line.js';
import { DELETE_SQL } from '../session-life.js';
import { StoreWriter, type StatementName, type StatementParams } from '../store-writer.js';

const SQL: Record<StatementName, string> = {
  upsertSession: `
    INSERT INTO sessions (sid, session_key, status, history_version, overrides, cwd, boot_id, created_at, updated_at, agent)
    VALUES ($1, $2, 'active', $4, $5, $6, $7, $8, $8, $9)
    ON CONFLICT (sid) DO UPDATE SET
      agent = COALESCE(sessions.agent, EXCLUDED.agent), archived_at = NULL,
      session_key = EXCLUDED.session_key,
      status = CASE WHEN $3::int = 1 THEN 'active' ELSE sessions.status END,
      end_reason = CASE WHEN $3::int = 1 THEN NULL ELSE sessions.end_reason END,
      retained_reason = CASE WHEN $3::int = 1 THEN NULL ELSE sessions.retained_reason END,
      history_version = EXCLUDED.history_version,
      overrides = EXCLUDED.overrides, cwd = EXCLUDED.cwd, boot_id = EXCLUDED.boot_id, updated_at = EXCLUDED.updated_at`,
  touchSession: 'UPDATE sessions SET history_version = $1, updated_at = $2, archived_at = NULL WHERE sid = $3',
  insertMessage: 'INSERT INTO messages (sid, seq, role, content, turn_id, created_at, tool_calls, tool_call_id, parts) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)',
  deleteMessagesFrom: 'DELETE FROM messages WHERE sid = $1 AND seq >= $2',
  insertTurn: "INSERT INTO turns (turn_id, sid, request_id, status, boot_id, started_at, by_user, trace) VALUES ($1, $2, $3, 'running', $4, $5, $6, $7)",
  updateTurn: `
    UPDATE turns SET status = $1, ended_at = $2, error = $3, model = $4, prompt_tokens = $5, completion_tokens = $6,
      cached_tokens = $7, reasoning_tokens = $8, model_calls = $9
    WHERE turn_id = $10`,
  finalizeSession: "UPDATE sessions SET status = 'finalized', end_reason = $1, retained_reason = NULL, updated_at = $2 WHERE sid = $3",
  retainSession: "UPDATE sessions SET status = 'retained', retained_reason = $1, end_reason = NULL, updated_at = $2 WHERE sid = $3",
  // The node this host runs as, set on the writing connection (none for a single host).
  insertBoot: "INSERT INTO boots (boot_id, pid, started_at, node_id) VALUES ($1, $2, $3, NULLIF(current_setting('turnhost.node_id', true), ''))",
  updateBoot: 'UPDATE boots SET ended_at = $1, end_reason = $2 WHERE boot_id = $3',
  insertRequest: `
    INSERT INTO server_requests (id, sid, turn_id, method, params, status, boot_id, created_at)
    VALUES ($1, $2, $3, $4, $5, 'open', $6, $7)`,
  updateRequest: 'UPDATE server_requests SET status = $1, answers = $2, reason = $3, resolved_at = $4, answered_by = $5 WHERE id = $6',
  insertQueued: `
    INSERT INTO queue (queue_id, sid, position, text, client_message_id, request_id, turn_id, steered, queued_at, by_user, content)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
  updateQueuedText: 'UPDATE queue SET text = $1, content = NULL WHERE queue_id = $2',
  updateQueuedPlace: 'UPDATE queue SET steered = $1, position = $2 WHERE queue_id = $3',
  deleteQueued: 'DELETE FROM queue WHERE queue_id = $1',
  deleteQueue: 'DELETE FROM queue WHERE sid = $1',
  updateQueueRevision: 'UPDATE sessions SET queue_revision = $1 WHERE sid = $2',
  updateAgentSession: 'UPDATE sessions SET agent_session_id = $1 WHERE sid = $2',
  // A repeated id takes a new ord, as SQLite's REPLACE gives it a new rowid: it is the newest.
  insertSubmit: `
    INSERT INTO submits (sid, client_message_id, turn_id, queue_id, steered) VALUES ($1, $2, $3, $4, $5)
    ON CONFLICT (sid, client_message_id) DO UPDATE SET
      turn_id = EXCLUDED.turn_id, queue_id = EXCLUDED.queue_id, steered = EXCLUDED.steered,
      ord = nextval(pg_get_serial_sequence('submits', 'ord'))`,
  updateSubmit: 'UPDATE submits SET steered = $1 WHERE sid = $2 AND client_message_id = $3',
  deleteOldestSubmit: 'DELETE FROM submits WHERE ord = (SELECT min(ord) FROM submits WHERE sid = $1)',
  insertWebhook: 'INSERT INTO webhook_outbox (sid, type, ref, detail, created_at) VALUES ($1, $2, $3, $4, $5)',
  ...REWIND_SQL,
  ...LEDGER_SQL,
  ...DELETE_SQL,
};

/** Where a statement's session id is among its parameters: the sessions a transaction writes, for the fence. */
const SID_PARAM: Partial<Record<StatementName, number>> = {
  upsertSession: 0,
  touchSession: 2,
  insertMessage: 0,
  deleteMessagesFrom: 0,
  insertTurn: 1,
  finalizeSession: 2,
  retainSession: 2,
  insertRequest: 1,
  insertQueued: 1,
  deleteQueue: 0,
  updateQueueRevision: 1,
  updateAgentSession: 1,
  insertSubmit: 0,
  updateSubmit: 1,
  deleteOldestSubmit: 0,
  insertWebhook: 0,
  holdSession: 0,
  insertBranch: 2,
  moveRows: 1,
  repointForks: 1,
  shortenPrefix: 1,
  ...(Object.fromEntries(Object.keys(DELETE_SQL).map((name) => [name, 0])) as Record<keyof typeof DELETE_SQL, number>),
};

export interface PendingStatement {
  /** The prepared statement's name: the server parses each kind once per connection. */
  name: StatementName;
  text: string;
  values: readonly unknown[];
}

export class PostgresWriter extends StoreWriter {
  /** The open transaction's statements, in order; the store takes them to send. */
  statements: PendingStatement[] = [];
  /** The sessions those statements write. */
  sids = new Set<string>();

  protected run<N extends StatementName>(statement: N, params: StatementParams[N]): void {
    this.statements.push({ name: statement, text: SQL[statement], values: params });
    const at = SID_PARAM[statement];
    if (at !== undefined) this.sids.add(params[at] as string);
  }
}
