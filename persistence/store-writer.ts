// Every row the host writes is written here, inside a transaction the Store opened.
import type Database from 'better-sqlite3';
import type { HistoryCache } from './history-cache.js';
import type { ChatMessage } from '../protocol/chat.js';
import type { TurnUsage } from '../protocol/outbound.js';

export type TurnStatus = 'running' | 'completed' | 'interrupted' | 'failed' | 'lost';
export type RequestStatus = 'open' | 'answered' | 'expired' | 'cancelled';

export interface SessionRow {
  sid: string;
  /** False once this run's finalize latch is spent: a late change must not reactivate the row. */
  activate: boolean;
  sessionKey: string;
  historyVersion: number;
  overridesText: string;
  cwd: string | null;
  bootId: string;
}

export interface TurnReport {
  model?: string;
  usage?: TurnUsage;
}

export interface NewRequestRow {
  id: string;
  sid: string;
  turnId: string | null;
  method: string;
  paramsText: string;
  bootId: string;
}

/** A prompt waiting in its session's queue (PROTOCOL.md §2.1), or a steered text not yet taken. */
export interface QueuedPrompt {
  queueId: string;
  text: string;
  clientMessageId: string | null;
  /** The turn.start that submitted it: its turn events answer that request. */
  requestId: string;
  /** The id its turn runs under, chosen when it was submitted. */
  turnId: string;
  queuedAt: number;
  /** Its order in the queue: smaller runs first; the head gets one less than the smallest. */
  position: number;
}

/** What a session remembers of an accepted client_message_id. */
export interface SubmitRecord {
  turnId: string;
  queueId: string | null;
  steered: boolean;
}

export class StoreWriter {
  private readonly upsertSession: Database.Statement;
  private readonly touch: Database.Statement;
  /** A turn's end changes its session's version and time: written once per session per transaction. */
  private readonly touches = new Map<string, { historyVersion: number; now: number }>();
  private readonly insertMessage: Database.Statement;
  private readonly deleteMessagesFrom: Database.Statement;
  private readonly insertTurn: Database.Statement;
  private readonly updateTurn: Database.Statement;
  private readonly finalize: Database.Statement;
  private readonly retain: Database.Statement;
  private readonly insertBoot: Database.Statement;
  private readonly updateBoot: Database.Statement;
  private readonly insertRequest: Database.Statement;
  private readonly updateRequest: Database.Statement;
  private readonly insertQueued: Database.Statement;
  private readonly updateQueuedText: Database.Statement;
  private readonly updateQueuedPlace: Database.Statement;
  private readonly deleteQueued: Database.Statement;
  private readonly deleteQueue: Database.Statement;
  private readonly updateQueueRevision: Database.Statement;
  private readonly insertSubmit: Database.Statement;
  private readonly updateSubmitRow: Database.Statement;
  private readonly deleteSubmit: Database.Statement;

  /**
   * What the history cache must learn once the running transaction commits; dropped if it rolls
   * back. The store empties it around each transaction.
   */
  committedHistory: ((cache: HistoryCache) => void)[] = [];

  constructor(db: Database.Database) {
    this.upsertSession = db.prepare(`
      INSERT INTO sessions (sid, session_key, status, history_version, overrides, cwd, boot_id, created_at, updated_at)
      VALUES (@sid, @sessionKey, 'active', @historyVersion, @overridesText, @cwd, @bootId, @now, @now)
      ON CONFLICT (sid) DO UPDATE SET
        session_key = excluded.session_key,
        status = CASE WHEN @activate THEN 'active' ELSE status END,
        end_reason = CASE WHEN @activate THEN NULL ELSE end_reason END,
        retained_reason = CASE WHEN @activate THEN NULL ELSE retained_reason END,
        history_version = excluded.history_version,
        overrides = excluded.overrides, cwd = excluded.cwd, boot_id = excluded.boot_id, updated_at = excluded.updated_at`);
    this.touch = db.prepare('UPDATE sessions SET history_version = ?, updated_at = ? WHERE sid = ?');
    this.insertMessage = db.prepare(
      'INSERT INTO messages (sid, seq, role, content, turn_id, created_at, tool_calls, tool_call_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    );
    this.deleteMessagesFrom = db.prepare('DELETE FROM messages WHERE sid = ? AND seq >= ?');
    this.insertTurn = db.prepare(
      "INSERT INTO turns (turn_id, sid, request_id, status, boot_id, started_at) VALUES (?, ?, ?, 'running', ?, ?)",
    );
    this.updateTurn = db.prepare(`
      UPDATE turns SET status = ?, ended_at = ?, error = ?, model = ?, prompt_tokens = ?, completion_tokens = ?, model_calls = ?
      WHERE turn_id = ?`);
    this.finalize = db.prepare(
      "UPDATE sessions SET status = 'finalized', end_reason = ?, retained_reason = NULL, updated_at = ? WHERE sid = ?",
    );
    this.retain = db.prepare(
      "UPDATE sessions SET status = 'retained', retained_reason = ?, end_reason = NULL, updated_at = ? WHERE sid = ?",
    );
    this.insertBoot = db.prepare('INSERT INTO boots (boot_id, pid, started_at) VALUES (?, ?, ?)');
    this.updateBoot = db.prepare('UPDATE boots SET ended_at = ?, end_reason = ? WHERE boot_id = ?');
    this.insertRequest = db.prepare(`
      INSERT INTO server_requests (id, sid, turn_id, method, params, status, boot_id, created_at)
      VALUES (?, ?, ?, ?, ?, 'open', ?, ?)`);
    this.updateRequest = db.prepare(
      'UPDATE server_requests SET status = ?, answers = ?, reason = ?, resolved_at = ? WHERE id = ?',
    );
    this.insertQueued = db.prepare(`
      INSERT INTO queue (queue_id, sid, position, text, client_message_id, request_id, turn_id, steered, queued_at)
      VALUES (@queueId, @sid, @position, @text, @clientMessageId, @requestId, @turnId, @steered, @queuedAt)`);
    this.updateQueuedText = db.prepare('UPDATE queue SET text = ? WHERE queue_id = ?');
    this.updateQueuedPlace = db.prepare('UPDATE queue SET steered = ?, position = ? WHERE queue_id = ?');
    this.deleteQueued = db.prepare('DELETE FROM queue WHERE queue_id = ?');
    this.deleteQueue = db.prepare('DELETE FROM queue WHERE sid = ?');
    this.updateQueueRevision = db.prepare('UPDATE sessions SET queue_revision = ? WHERE sid = ?');
    this.insertSubmit = db.prepare(
      'INSERT OR REPLACE INTO submits (sid, client_message_id, turn_id, queue_id, steered) VALUES (?, ?, ?, ?, ?)',
    );
    this.updateSubmitRow = db.prepare('UPDATE submits SET steered = ? WHERE sid = ? AND client_message_id = ?');
    this.deleteSubmit = db.prepare('DELETE FROM submits WHERE rowid = (SELECT MIN(rowid) FROM submits WHERE sid = ?)');
  }

  /** Writes what the transaction deferred (one touch per session): its last step. */
  settle(): void {
    for (const [sid, { historyVersion, now }] of this.touches) this.touch.run(historyVersion, now, sid);
    this.touches.clear();
  }

  /** The transaction rolled back: what it deferred is forgotten with it. */
  discardPending(): void {
    this.touches.clear();
  }

  /** Writes the session row; `activate` makes it `active` (a retained or finalized session named again is active again). */
  saveSession(row: SessionRow, now = Date.now()): void {
    this.settle(); // an earlier turn's touch must not land after this row's version
    this.upsertSession.run({ ...row, activate: row.activate ? 1 : 0, now });
  }

  /**
   * A turn's end: only the version and the time change, written when the transaction settles, so a
   * session whose turns end together in one group has its row updated once.
   */
  touchSession(sid: string, historyVersion: number, now = Date.now()): void {
    this.touches.set(sid, { historyVersion, now });
  }

  /** Appends messages at positions firstSeq, firstSeq + 1, … of the session's history. */
  appendMessages(sid: string, firstSeq: number, messages: readonly ChatMessage[], turnId: string | null, now = Date.now()): void {
    let seq = firstSeq;
    for (const m of messages) {
      const toolCalls = m.tool_calls === undefined ? null : JSON.stringify(m.tool_calls);
      this.insertMessage.run(sid, seq++, m.role, m.content, turnId, now, toolCalls, m.tool_call_id ?? null);
    }
    this.committedHistory.push((cache) => cache.appended(sid, firstSeq, messages));
  }

  /** Cuts the stored history to its first `keep` messages. */
  truncateHistory(sid: string, keep: number): void {
    this.deleteMessagesFrom.run(sid, keep);
    this.committedHistory.push((cache) => cache.truncated(sid, keep));
  }

  /** A turn whose end could not be stored: its messages go, and it is stored as failed. */
  undoTurn(sid: string, fromSeq: number, turnId: string, error: string, now = Date.now()): void {
    this.deleteMessagesFrom.run(sid, fromSeq);
    this.committedHistory.push((cache) => cache.truncated(sid, fromSeq));
    this.updateTurn.run('failed', now, error, null, null, null, null, turnId);
  }

  startTurn(turnId: string, sid: string, requestId: string, bootId: string, now = Date.now()): void {
    this.insertTurn.run(turnId, sid, requestId, bootId, now);
  }

  /** A turn's outcome, with the model and token usage its agent reported (AGENT.md §3). */
  endTurn(turnId: string, status: Exclude<TurnStatus, 'running'>, error: string | null, report: TurnReport = {}, now = Date.now()): void {
    const u = report.usage;
    this.updateTurn.run(status, now, error, report.model ?? null, u?.prompt_tokens ?? null, u?.completion_tokens ?? null, u?.calls ?? null, turnId);
  }

  finalizeSession(sid: string, endReason: string, now = Date.now()): void {
    this.settle();
    this.finalize.run(endReason, now, sid);
  }

  retainSession(sid: string, reason: string, now = Date.now()): void {
    this.settle();
    this.retain.run(reason, now, sid);
  }

  startBoot(bootId: string, pid: number, now = Date.now()): void {
    this.insertBoot.run(bootId, pid, now);
  }

  endBoot(bootId: string, reason: string, now = Date.now()): void {
    this.updateBoot.run(now, reason, bootId);
  }

  openRequest(row: NewRequestRow, now = Date.now()): void {
    this.insertRequest.run(row.id, row.sid, row.turnId, row.method, row.paramsText, row.bootId, now);
  }

  closeRequest(id: string, status: Exclude<RequestStatus, 'open'>, answersText: string | null, reason: string | null, now = Date.now()): void {
    this.updateRequest.run(status, answersText, reason, now, id);
  }

  /** A prompt joins its session's queue; `steered`: handed to the running turn, not shown in the queue. */
  queuePrompt(sid: string, item: QueuedPrompt, steered = false): void {
    this.insertQueued.run({ ...item, sid, steered: steered ? 1 : 0 });
  }

  editQueued(queueId: string, text: string): void {
    this.updateQueuedText.run(text, queueId);
  }

  /** A queued prompt handed to the running turn (steered), or a steered text back in the queue at `position`. */
  placeQueued(queueId: string, steered: boolean, position: number): void {
    this.updateQueuedPlace.run(steered ? 1 : 0, position, queueId);
  }

  /** A queued prompt deleted or started, or a steered text the turn took (stored with the turn's messages). */
  removeQueued(queueId: string): void {
    this.deleteQueued.run(queueId);
  }

  /** An interrupt's stop: the queue and the steered texts not yet taken. */
  clearQueue(sid: string): void {
    this.deleteQueue.run(sid);
  }

  setQueueRevision(sid: string, revision: number): void {
    this.updateQueueRevision.run(revision, sid);
  }

  rememberSubmit(sid: string, clientMessageId: string, record: SubmitRecord): void {
    this.insertSubmit.run(sid, clientMessageId, record.turnId, record.queueId, record.steered ? 1 : 0);
  }

  /** The submit's text went into a running turn (steered), or back into the queue. */
  markSteered(sid: string, clientMessageId: string, steered: boolean): void {
    this.updateSubmitRow.run(steered ? 1 : 0, sid, clientMessageId);
  }

  /** The session's oldest remembered client_message_id is forgotten. */
  forgetOldestSubmit(sid: string): void {
    this.deleteSubmit.run(sid);
  }
}
