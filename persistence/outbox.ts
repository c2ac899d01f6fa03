// The webhook outbox (PROTOCOL.md §8.2): each event to deliver is a row, written in the same commit
// as what it reports (a turn's start or end, an open request: store-writer.ts), so a crash loses
// none. A row only names what it reports (`ref`: the turn or the request): the daemon reads the
// rest from the rows of that same commit when it sends it, so the body is the same on every
// attempt, and the turn's commit writes no copy of a reply. The daemon delivers the rows at least
// once, in order per session, and moves each on: delivered (the row goes), tried again later, or
// failed after a day.
import { decodeOr } from './codec.js';

export const WEBHOOK_EVENTS = ['turn.end', 'turn.error', 'request.open', 'schedule.fired'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** A webhook's reply is cut here (PROTOCOL.md §8.2): a receiver wants to know, not to read it all. */
const REPLY_CHARS = 2000;

/** `--webhook-events a,b`: the events named, each checked; an unknown one is an error naming it. */
export function parseWebhookEvents(text: string): WebhookEvent[] {
  const names = text.split(',').map((name) => name.trim()).filter((name) => name !== '');
  for (const name of names) {
    if (!(WEBHOOK_EVENTS as readonly string[]).includes(name)) throw new Error(`--webhook-events: unknown event ${JSON.stringify(name)} (events: ${WEBHOOK_EVENTS.join(', ')})`);
  }
  return names as WebhookEvent[];
}

/** A schedule's fire is a prompt with client_message_id `schedule:<id>:<planned time>` (PROTOCOL.md §8.1). */
export function scheduleIdOf(clientMessageId: string): string | undefined {
  return /^schedule:([^:]+):/.exec(clientMessageId)?.[1];
}

export interface OutboxRow {
  /** Its place in the outbox: a session's events go in this order. */
  seq: number;
  sid: string;
  type: WebhookEvent;
  /** The turn (turn.end, turn.error, schedule.fired) or the request (request.open) it reports. */
  ref: string;
  /** schedule.fired: the fire's client_message_id. */
  detail: string | null;
  created_at: number;
  attempts: number;
  next_at: number;
  status: 'pending' | 'failed';
  /** The URLs that answered 2xx already, as JSON (a retry goes to the others). */
  delivered_to: string;
  last_error: string | null;
}

/** What the store holds of a turn or a request, for an event's body. */
export interface EventFacts {
  turn?: { status: string; error: string | null; prompt_tokens: number | null; completion_tokens: number | null; model_calls: number | null; reply: string | null };
  request?: { turn_id: string | null; method: string; params: string };
}

export interface Outbox {
  /** Each session's oldest pending event, when its time has come: one session's events go in order. */
  ready(nowMs: number, limit: number): Promise<OutboxRow[]>;
  /** When the next pending event is due, or null. */
  nextDue(): Promise<number | null>;
  /** What the event reports, read from the rows committed with it. */
  facts(row: OutboxRow): Promise<EventFacts>;
  /** These events went: their rows go, in one write. */
  delivered(seqs: readonly number[]): Promise<void>;
  retry(seq: number, attempts: number, nextAt: number, deliveredTo: string, error: string): Promise<void>;
  failed(seq: number, attempts: number, error: string): Promise<void>;
  /** What waits and what failed, for `.webhooks` and the metrics. */
  list(): Promise<OutboxRow[]>;
  counts(): Promise<{ pending: number; failed: number }>;
}

/** The `webhook-id` of every attempt of an event: what it reports and its kind, unique as turn and request ids are. */
export function webhookId(row: Pick<OutboxRow, 'type' | 'ref'>): string {
  return `msg_${row.ref}_${row.type.replace('.', '_')}`;
}

/** The body as sent (`{type, timestamp, data}`): the same on every attempt, since what it reads was committed with it. */
export function webhookBody(row: OutboxRow, facts: EventFacts): string {
  return JSON.stringify({ type: row.type, timestamp: new Date(row.created_at).toISOString(), data: { session_id: row.sid, ...eventData(row, facts) } });
}

function eventData(row: OutboxRow, facts: EventFacts): Record<string, unknown> {
  const { turn, request } = facts;
  switch (row.type) {
    case 'turn.end':
      return { turn_id: row.ref, interrupted: turn?.status === 'interrupted', ...usageOf(turn), reply: (turn?.reply ?? '').slice(0, REPLY_CHARS) };
    case 'turn.error':
      return { turn_id: row.ref, message: turn?.error ?? 'the turn failed' };
    case 'request.open':
      return { ...(request?.turn_id ? { turn_id: request.turn_id } : {}), request_id: row.ref, method: request?.method ?? null, question: questionOf(decodeOr<Record<string, unknown>>(request?.params, {})) };
    case 'schedule.fired': {
      const cmid = row.detail ?? '';
      return { schedule_id: scheduleIdOf(cmid) ?? null, planned_at: cmid.slice(cmid.indexOf(':', 'schedule:'.length) + 1), turn_id: row.ref };
    }
  }
}

function usageOf(turn: EventFacts['turn']): { usage?: { prompt_tokens: number; completion_tokens: number; calls: number } } {
  if (turn === undefined || turn.prompt_tokens === null) return {};
  return { usage: { prompt_tokens: turn.prompt_tokens, completion_tokens: turn.completion_tokens ?? 0, calls: turn.model_calls ?? 0 } };
}

/** What a request asks: its question, or a batch's questions one per line. */
function questionOf(params: Record<string, unknown>): string {
  if (typeof params['question'] === 'string') return params['question'];
  const questions = Array.isArray(params['questions']) ? params['questions'] : [];
  return questions.map((q: unknown) => String((q as { question?: unknown } | null)?.question ?? '')).join('\n');
}

export const OUTBOX_COLUMNS = 'seq, sid, type, ref, detail, created_at, attempts, next_at, status, delivered_to, last_error';

/** The rows an event's body reads (`$1` the turn or request id, `$2` the session). */
export const TURN_FACTS_SQL = `SELECT status, error, prompt_tokens, completion_tokens, model_calls,
  (SELECT content FROM messages m WHERE m.sid = $2 AND m.turn_id = $1 AND m.role = 'assistant' ORDER BY m.seq DESC LIMIT 1) AS reply
  FROM turns WHERE turn_id = $1`;
export const REQUEST_FACTS_SQL = 'SELECT turn_id, method, params FROM server_requests WHERE id = $1';

/** Each session's oldest pending event: what may be sent next (a session's events go in order). */
const SESSION_HEADS = "SELECT min(seq) FROM webhook_outbox WHERE status = 'pending' GROUP BY sid";

/**
 * Each session's oldest pending event, when its time has come (`$1` now, `$2` how many): a
 * session's next event waits until the one before it is delivered or has failed.
 */
export const READY_SQL = `SELECT ${OUTBOX_COLUMNS} FROM webhook_outbox WHERE seq IN (${SESSION_HEADS}) AND next_at <= $1 ORDER BY seq LIMIT $2`;

/** When the next of those is due: an event behind one that waits for its retry waits with it. */
export const NEXT_DUE_SQL = `SELECT min(next_at) AS next FROM webhook_outbox WHERE seq IN (${SESSION_HEADS})`;
