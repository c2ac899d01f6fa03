// Every row the host writes is written here, inside a transaction the store opened. What a write
// means is decided once, here; each store says how a statement runs in its own dialect
// (sqlite/sqlite-writer.ts runs it at once, postgres/postgres-writer.ts sends it with its group).
import { DELETE_STEPS } from './session-life.js';
import type { HistoryCache } from './history-cache.js';
import type { ChatMessage } from '../protocol/chat.js';
import { storedBlocks, type ContentBlock } from '../protocol/content.js';
import type { TurnUsage } from '../protocol/usage.js';
import type { TraceContext } from '../protocol/trace-context.js';
import type { WebhookEvent } from '../protocol/webhook-events.js';

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
  /** The session's agent (AGENT.md §8): stored once, never changed after. */
  agent: string;
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
  /** Who submitted it (PROTOCOL.md §5.6); null when nobody said. */
  by: string | null;
  /** The client's trace context (PROTOCOL.md §5.8), held in memory only: a prompt read back from the store begins a trace of its own. */
  traceContext?: TraceContext;
  /** Its blocks, when it carries more than text (PROTOCOL.md §2.4); `text` is their text form. */
  content?: ContentBlock[];
}

/** A queue row as both stores read it. */
export interface QueueRow {
  queue_id: string;
  text: string;
  client_message_id: string | null;
  request_id: string;
  turn_id: string;
  queued_at: number | string;
  position: number | string;
  by_user: string | null;
  content: string | null;
}

/** A session's queue, in order (`$1`: the session). */
export const QUEUE_SQL = `SELECT queue_id, text, client_message_id, request_id, turn_id, queued_at, position, by_user, content
  FROM queue WHERE sid = $1 ORDER BY position`;

export function toQueuedPrompt(row: QueueRow): QueuedPrompt {
  const prompt: QueuedPrompt = {
    queueId: row.queue_id,
    text: row.text,
    clientMessageId: row.client_message_id,
    requestId: row.request_id,
    turnId: row.turn_id,
    queuedAt: Number(row.queued_at),
    position: Number(row.position),
    by: row.by_user,
  };
  if (row.content !== null) prompt.content = storedBlocks(JSON.parse(row.content));
  return prompt;
}

/** What a session remembers of an accepted client_message_id. */
export interface SubmitRecord {
  turnId: string;
  queueId: string | null;
  steered: boolean;
  /** Its queue row, while it is still stored as queued. */
  queued?: QueuedPrompt;
}

/** A submit's record with its queue row (columns of QueuedPrompt, prefixed q_, null when none), as both stores read it. */
export interface SubmitRow {
  turn_id: string;
  queue_id: string | null;
  steered: number;
  q_text: string | null;
  q_client_message_id: string | null;
  q_request_id: string | null;
  q_queued_at: number | null;
  q_position: number | null;
  q_by_user: string | null;
  q_content: string | null;
}

/** The columns of SubmitRow, for both stores' SELECT (submits s LEFT JOIN queue q). */
export const SUBMIT_COLUMNS = `s.turn_id, s.queue_id, s.steered, q.text AS q_text, q.client_message_id AS q_client_message_id,
  q.request_id AS q_request_id, q.queued_at AS q_queued_at, q.position AS q_position, q.by_user AS q_by_user, q.content AS q_content`;

export function toSubmitRecord(row: SubmitRow): SubmitRecord {
  const record = { turnId: row.turn_id, queueId: row.queue_id, steered: row.steered === 1 };
  if (row.queue_id === null || row.q_position === null) return record;
  const queued = toQueuedPrompt({
    queue_id: row.queue_id,
    text: row.q_text ?? '',
    client_message_id: row.q_client_message_id,
    request_id: row.q_request_id ?? '',
    turn_id: row.turn_id,
    queued_at: row.q_queued_at ?? 0,
    position: row.q_position,
    by_user: row.q_by_user,
    content: row.q_content,
  });
  return { ...record, queued };
}

/** A turn's model and usage as its row holds them; nulls when its agent did not say. */
type UsageParams = [model: string | null, promptTokens: number | null, completionTokens: number | null, cachedTokens: number | null, reasoningTokens: number | null, calls: number | null];

function usageParams(report: TurnReport): UsageParams {
  const u = report.usage;
  return [report.model ?? null, u?.prompt_tokens ?? null, u?.completion_tokens ?? null, u?.cached_tokens ?? null, u?.reasoning_tokens ?? null, u?.calls ?? null];
}

/** The statements a writer runs, each with its parameters in the order given. */
export type StatementParams = {
  upsertSession: [sid: string, sessionKey: string, activate: 0 | 1, historyVersion: number, overridesText: string, cwd: string | null, bootId: string, now: number, agent: string];
  touchSession: [historyVersion: number, now: number, sid: string];
  insertMessage: [sid: string, seq: number, role: string, content: string, turnId: string | null, now: number, toolCalls: string | null, toolCallId: string | null, parts: string | null];
  deleteMessagesFrom: [sid: string, seq: number];
  insertTurn: [turnId: string, sid: string, requestId: string, bootId: string, now: number, by: string | null, trace: string | null];
  updateTurn: [status: string, now: number, error: string | null, ...usage: UsageParams, turnId: string];
  /** The ledger (persistence/ledger.ts). */
  noteUsage: [...usage: UsageParams, turnId: string];
  rollUpTurn: [turnId: string];
  finalizeSession: [endReason: string, now: number, sid: string];
  retainSession: [reason: string, now: number, sid: string];
  insertBoot: [bootId: string, pid: number, now: number];
  updateBoot: [now: number, reason: string, bootId: string];
  insertRequest: [id: string, sid: string, turnId: string | null, method: string, paramsText: string, bootId: string, now: number];
  updateRequest: [status: string, answersText: string | null, reason: string | null, now: number, answeredBy: string | null, id: string];
  insertQueued: [queueId: string, sid: string, position: number, text: string, clientMessageId: string | null, requestId: string, turnId: string, steered: 0 | 1, queuedAt: number, by: string | null, content: string | null];
  updateQueuedText: [text: string, queueId: string];
  updateQueuedPlace: [steered: 0 | 1, position: number, queueId: string];
  deleteQueued: [queueId: string];
  deleteQueue: [sid: string];
  updateQueueRevision: [revision: number, sid: string];
  updateAgentSession: [agentSessionId: string | null, sid: string];
  /** The newest record of the id: a repeated one replaces the old and counts as the newest. */
  insertSubmit: [sid: string, clientMessageId: string, turnId: string, queueId: string | null, steered: 0 | 1];
  updateSubmit: [steered: 0 | 1, sid: string, clientMessageId: string];
  deleteOldestSubmit: [sid: string];
  /** An event for the webhooks (PROTOCOL.md §8.2), in the commit of what it reports. */
  insertWebhook: [sid: string, type: string, ref: string, detail: string | null, now: number];
  /** A rewind (persistence/session-line.ts). */
  holdSession: [sid: string, now: number];
  insertBranch: [branch: string, now: number, sid: string, keep: number];
  moveRows: [branch: string, sid: string, keep: number];
  repointForks: [branch: string, sid: string, keep: number];
  shortenPrefix: [keep: number, sid: string];
  markTurns: [now: number, by: string | null, branch: string];
  /** A delete (persistence/session-life.ts): its hold, its tombstone, then each of its steps on the session alone. */
  holdDeletedSession: [sid: string];
  tombstoneSession: [sid: string, now: number, by: string | null];
} & { [step in (typeof DELETE_STEPS)[number]]: [sid: string] };

export type StatementName = keyof StatementParams;

export abstract class StoreWriter {
  /** A turn's end changes its session's version and time: written once per session per transaction. */
  private readonly touches = new Map<string, { historyVersion: number; now: number }>();

  /**
   * What the history cache must learn once the running transaction commits; dropped if it rolls
   * back. The store empties it around each transaction.
   */
  committedHistory: ((cache: HistoryCache) => void)[] = [];

  /** Runs (or, for a store that sends its group at once, records) one statement of the open transaction. */
  protected abstract run<N extends StatementName>(statement: N, params: StatementParams[N]): void;

  /** Writes what the transaction deferred (one touch per session): its last step. */
  settle(): void {
    for (const [sid, { historyVersion, now }] of this.touches) this.run('touchSession', [historyVersion, now, sid]);
    this.touches.clear();
  }

  /** The transaction rolled back: what it deferred is forgotten with it. */
  discardPending(): void {
    this.touches.clear();
    this.committedHistory = [];
  }

  /** Writes the session row; `activate` makes it `active` (a retained or finalized session named again is active again). */
  saveSession(row: SessionRow, now = Date.now()): void {
    this.settle(); // an earlier turn's touch must not land after this row's version
    this.run('upsertSession', [row.sid, row.sessionKey, row.activate ? 1 : 0, row.historyVersion, row.overridesText, row.cwd, row.bootId, now, row.agent]);
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
      this.run('insertMessage', [sid, seq++, m.role, m.content, turnId, now, toolCalls, m.tool_call_id ?? null, m.parts === undefined ? null : JSON.stringify(m.parts)]);
    }
    this.committedHistory.push((cache) => cache.appended(sid, firstSeq, messages));
  }

  /** Cuts the stored history to its first `keep` messages. */
  truncateHistory(sid: string, keep: number): void {
    this.run('deleteMessagesFrom', [sid, keep]);
    this.committedHistory.push((cache) => cache.truncated(sid, keep));
  }

  /**
   * The session keeps its first `keep` messages; the rest move to `branch`, whose line is the one
   * the session leaves (forks that shared it read it there). Nothing is deleted. A rewind
   * (PROTOCOL.md §2.2) marks the turns that moved superseded (`superseded`: when, by whom); a
   * compression that replaces the history leaves them unmarked.
   */
  rewind(sid: string, keep: number, branch: string, superseded: { by: string | null } | null, now = Date.now()): void {
    this.run('holdSession', [sid, now]);
    this.run('insertBranch', [branch, now, sid, keep]);
    this.run('moveRows', [branch, sid, keep]);
    this.run('repointForks', [branch, sid, keep]);
    this.run('shortenPrefix', [keep, sid]);
    if (superseded !== null) this.run('markTurns', [now, superseded.by, branch]);
    this.committedHistory.push((cache) => cache.truncated(sid, keep));
  }

  /** A turn whose end could not be stored: its messages go, and it is stored as failed. */
  undoTurn(sid: string, fromSeq: number, turnId: string, error: string, report: TurnReport, now = Date.now()): void {
    this.truncateHistory(sid, fromSeq);
    this.endTurn(turnId, 'failed', error, report, now);
  }

  /** A guest agent's session id for this session (AGENT.md §6): what a later `session/load` names; null: none (its memory no longer fits the history). */
  setAgentSession(sid: string, agentSessionId: string | null): void {
    this.run('updateAgentSession', [agentSessionId, sid]);
  }

  /** `trace`: the turn's span as its loss will end it (PROTOCOL.md §5.8), null when it is not traced. */
  startTurn(turnId: string, sid: string, requestId: string, bootId: string, by: string | null, now = Date.now(), trace: string | null = null): void {
    this.run('insertTurn', [turnId, sid, requestId, bootId, now, by, trace]);
  }

  /** A turn's outcome, with the model and token usage its agent reported (AGENT.md §3), added to the ledger's sums. */
  endTurn(turnId: string, status: Exclude<TurnStatus, 'running'>, error: string | null, report: TurnReport = {}, now = Date.now()): void {
    this.run('updateTurn', [status, now, error, ...usageParams(report), turnId]);
    this.run('rollUpTurn', [turnId]);
  }

  /** A running turn's usage so far (PROTOCOL.md §5.7): what its loss keeps. */
  noteUsage(turnId: string, report: TurnReport): void {
    this.run('noteUsage', [...usageParams(report), turnId]);
  }

  finalizeSession(sid: string, endReason: string, now = Date.now()): void {
    this.settle();
    this.run('finalizeSession', [endReason, now, sid]);
  }

  retainSession(sid: string, reason: string, now = Date.now()): void {
    this.settle();
    this.run('retainSession', [reason, now, sid]);
  }

  startBoot(bootId: string, pid: number, now = Date.now()): void {
    this.run('insertBoot', [bootId, pid, now]);
  }

  endBoot(bootId: string, reason: string, now = Date.now()): void {
    this.run('updateBoot', [now, reason, bootId]);
  }

  openRequest(row: NewRequestRow, now = Date.now()): void {
    this.run('insertRequest', [row.id, row.sid, row.turnId, row.method, row.paramsText, row.bootId, now]);
  }

  /** `answeredBy`: who answered (or declined) it (PROTOCOL.md §5.6); null for a timeout, a cancel, a shutdown. */
  closeRequest(id: string, status: Exclude<RequestStatus, 'open'>, answersText: string | null, reason: string | null, answeredBy: string | null = null, now = Date.now()): void {
    this.run('updateRequest', [status, answersText, reason, now, answeredBy, id]);
  }

  /** A prompt joins its session's queue; `steered`: handed to the running turn, not shown in the queue. */
  queuePrompt(sid: string, item: QueuedPrompt, steered = false): void {
    this.run('insertQueued', [item.queueId, sid, item.position, item.text, item.clientMessageId, item.requestId, item.turnId, steered ? 1 : 0, item.queuedAt, item.by, item.content === undefined ? null : JSON.stringify(item.content)]);
  }

  editQueued(queueId: string, text: string): void {
    this.run('updateQueuedText', [text, queueId]);
  }

  /** A queued prompt handed to the running turn (steered), or a steered text back in the queue at `position`. */
  placeQueued(queueId: string, steered: boolean, position: number): void {
    this.run('updateQueuedPlace', [steered ? 1 : 0, position, queueId]);
  }

  /** A queued prompt deleted or started, or a steered text the turn took (stored with the turn's messages). */
  removeQueued(queueId: string): void {
    this.run('deleteQueued', [queueId]);
  }

  /** An interrupt's stop: the queue and the steered texts not yet taken. */
  clearQueue(sid: string): void {
    this.run('deleteQueue', [sid]);
  }

  setQueueRevision(sid: string, revision: number): void {
    this.run('updateQueueRevision', [revision, sid]);
  }

  rememberSubmit(sid: string, clientMessageId: string, record: SubmitRecord): void {
    this.run('insertSubmit', [sid, clientMessageId, record.turnId, record.queueId, record.steered ? 1 : 0]);
  }

  /** The submit's text went into a running turn (steered), or back into the queue. */
  markSteered(sid: string, clientMessageId: string, steered: boolean): void {
    this.run('updateSubmit', [steered ? 1 : 0, sid, clientMessageId]);
  }

  /**
   * An event the daemon delivers to the webhooks, written with what it reports, so a crash loses
   * neither. `ref` names it (the turn, or the request); the daemon reads the rest when it sends it.
   */
  queueWebhook(sid: string, type: WebhookEvent, ref: string, detail: string | null = null, now = Date.now()): void {
    this.run('insertWebhook', [sid, type, ref, detail, now]);
  }

  /**
   * The session is deleted (PROTOCOL.md §2.3): its tombstone, then its history, queue, questions,
   * schedules, shares, deliveries and home snapshot, but what a fork's line still reads.
   */
  deleteSession(sid: string, by: string | null, now = Date.now()): void {
    this.settle();
    this.run('holdDeletedSession', [sid]);
    this.run('tombstoneSession', [sid, now, by]);
    for (const step of DELETE_STEPS) this.run(step, [sid]);
  }

  /** The session's oldest remembered client_message_id is forgotten. */
  forgetOldestSubmit(sid: string): void {
    this.run('deleteOldestSubmit', [sid]);
  }
}
