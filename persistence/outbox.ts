// The webhook outbox (PROTOCOL.md §8.2): each event to deliver is a row, written in the same commit
// as what it reports (a turn's start or end, an open request: store-writer.ts), so a crash loses
// none. A row only names what it reports (`ref`: the turn or the request): the daemon reads the
// rest from the rows of that same commit when it sends it, so the body is the same on every
// attempt, and the turn's commit writes no copy of a reply. The daemon then makes each event one
// delivery per URL (`webhook_deliveries`, in one write with the outbox row's removal), so that each
// URL is its own stream: what a URL took and what it still owes is its own, and a receiver that is
// down holds up no other. Each delivery is sent at least once, in order per session and URL, and
// moved on: delivered (the row goes), tried again later, or failed after a day.
import { decodeOr } from './codec.js';
import type { WebhookEvent } from '../protocol/webhook-events.js';

/** A webhook's reply is cut here (PROTOCOL.md §8.2): a receiver wants to know, not to read it all. */
const REPLY_CHARS = 2000;

/** A schedule's fire is a prompt with client_message_id `schedule:<id>:<planned time>` (PROTOCOL.md §8.1). */
export function scheduleIdOf(clientMessageId: string): string | undefined {
  return /^schedule:([^:]+):/.exec(clientMessageId)?.[1];
}

/** An event as the host wrote it, before the daemon made it one delivery per URL. */
export interface OutboxEvent {
  sid: string;
  type: WebhookEvent;
  /** The turn (turn.end, turn.error, schedule.fired) or the request (request.open) it reports. */
  ref: string;
  /** schedule.fired: the fire's client_message_id. */
  detail: string | null;
  created_at: number;
}

/** One event owed to one URL: each URL is its own stream (PROTOCOL.md §8.2). */
export interface DeliveryRow extends OutboxEvent {
  /** Its place among the URL's deliveries: a session's events go to a URL in this order. */
  id: number;
  url: string;
  attempts: number;
  next_at: number;
  status: 'pending' | 'failed';
  last_error: string | null;
}

/** What one look at a URL's stream did, written in one go. */
export interface DeliveryOutcomes {
  delivered: number[];
  retried: { id: number; attempts: number; nextAt: number; error: string }[];
  failed: { id: number; attempts: number; error: string }[];
}

/** One URL's backlog: what waits for it and what it was given up on. */
export interface UrlBacklog {
  url: string;
  pending: number;
  failed: number;
}

/** What the store holds of a turn or a request, for an event's body. */
export interface EventFacts {
  /** The session's agent (AGENT.md §8); null for a session stored before there were several, or no longer stored. */
  agent: string | null;
  turn?: { status: string; error: string | null; prompt_tokens: number | null; completion_tokens: number | null; model_calls: number | null; reply: string | null };
  request?: { turn_id: string | null; method: string; params: string };
}

export interface Outbox {
  /**
   * The events the host wrote since the last call become one delivery per URL (but those a URL
   * took before this was per URL), and leave the outbox; how many events moved. One write.
   */
  fanOut(urls: readonly string[]): Promise<number>;
  /** The URL's next delivery of each session, when its time has come: one session's events reach a URL in order. */
  ready(url: string, nowMs: number, limit: number): Promise<DeliveryRow[]>;
  /** When the URL's next pending delivery is due, or null. */
  nextDue(url: string): Promise<number | null>;
  /** What the event reports, read from the rows committed with it. */
  facts(event: OutboxEvent): Promise<EventFacts>;
  /** A look's outcomes, in one write: delivered rows go, the others are moved on. */
  settle(outcomes: DeliveryOutcomes): Promise<void>;
  /** What waits and what failed, for `.webhooks`. */
  list(): Promise<DeliveryRow[]>;
  /** Each URL's backlog, for the metrics. */
  backlogs(): Promise<UrlBacklog[]>;
}

/** The `webhook-id` of every attempt of an event: what it reports and its kind, unique as turn and request ids are. */
export function webhookId(row: Pick<OutboxEvent, 'type' | 'ref'>): string {
  return `msg_${row.ref}_${row.type.replace('.', '_')}`;
}

/** The body as sent (`{type, timestamp, data}`): the same on every attempt, since what it reads was committed with it. */
export function webhookBody(row: OutboxEvent, facts: EventFacts): string {
  const data = { session_id: row.sid, ...(facts.agent === null ? {} : { agent: facts.agent }), ...eventData(row, facts) };
  return JSON.stringify({ type: row.type, timestamp: new Date(row.created_at).toISOString(), data });
}

function eventData(row: OutboxEvent, facts: EventFacts): Record<string, unknown> {
  const { turn, request } = facts;
  switch (row.type) {
    case 'turn.end':
      return { turn_id: row.ref, interrupted: turn?.status === 'interrupted', ...usageOf(turn), reply: (turn?.reply ?? '').slice(0, REPLY_CHARS) };
    case 'turn.error':
      return { turn_id: row.ref, message: turn?.error ?? 'the turn failed' };
    case 'request.open':
      return { ...(request?.turn_id ? { turn_id: request.turn_id } : {}), request_id: row.ref, method: request?.method ?? null, question: questionOf(decodeOr<Record<string, unknown>>(request?.params, {})) };
    case 'session.deleted':
      return { deleted_by: row.detail };
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

export const DELIVERY_COLUMNS = 'id, url, sid, type, ref, detail, created_at, attempts, next_at, status, last_error';

/** The rows an event's body reads (`$1` the turn or request id, `$2` the session). */
export const TURN_FACTS_SQL = `SELECT status, error, prompt_tokens, completion_tokens, model_calls,
  (SELECT content FROM messages m WHERE m.sid = $2 AND m.turn_id = $1 AND m.role = 'assistant' ORDER BY m.seq DESC LIMIT 1) AS reply
  FROM turns WHERE turn_id = $1`;
export const REQUEST_FACTS_SQL = 'SELECT turn_id, method, params FROM server_requests WHERE id = $1';
/** A session's agent, or a deleted one's, from its tombstone. */
export const AGENT_FACT_SQL = 'SELECT agent FROM sessions WHERE sid = $1 UNION ALL SELECT agent FROM deleted_sessions WHERE sid = $1';

/** How many events one fan-out moves: a long outage's backlog moves in several writes, none long. */
export const FAN_OUT_BATCH = 1000;

/** The URL's (`$1`) oldest pending delivery of each session: what may be sent to it next. */
const STREAM_HEADS = "SELECT min(id) FROM webhook_deliveries WHERE url = $1 AND status = 'pending' GROUP BY sid";

/**
 * The URL's next delivery of each session, when its time has come (`$2` now, `$3` how many): a
 * session's next event waits until the one before it reached this URL or was given up on; other
 * URLs go their own way.
 */
export const READY_SQL = `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE id IN (${STREAM_HEADS}) AND next_at <= $2 ORDER BY id LIMIT $3`;

/** When the next of those is due: a delivery behind one that waits for its retry waits with it. */
export const NEXT_DUE_SQL = `SELECT min(next_at) AS next FROM webhook_deliveries WHERE id IN (${STREAM_HEADS})`;

export const LIST_SQL = `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries ORDER BY id`;
export const BACKLOGS_SQL = "SELECT url, sum(CASE WHEN status = 'pending' THEN 1 ELSE 0 END) AS pending, sum(CASE WHEN status = 'failed' THEN 1 ELSE 0 END) AS failed FROM webhook_deliveries GROUP BY url";
