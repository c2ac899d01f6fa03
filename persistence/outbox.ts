// The webhook outbox (PROTOCOL.md §8.2): each event to deliver is a row, written in the same commit
// as what it reports (a turn's start or end, an open request: store-writer.ts), so a crash
// loses none. The daemon delivers the rows at least once, in order per session, and moves each on:
// delivered (the row goes), tried again later, or failed after a day.

import { randomBytes } from 'node:crypto';

export const WEBHOOK_EVENTS = ['turn.end', 'turn.error', 'request.open', 'schedule.fired'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** `--webhook-events a,b`: the events named, each checked; an unknown one is an error naming it. */
export function parseWebhookEvents(text: string): WebhookEvent[] {
  const names = text.split(',').map((name) => name.trim()).filter((name) => name !== '');
  for (const name of names) {
    if (!(WEBHOOK_EVENTS as readonly string[]).includes(name)) throw new Error(`--webhook-events: unknown event ${JSON.stringify(name)} (events: ${WEBHOOK_EVENTS.join(', ')})`);
  }
  return names as WebhookEvent[];
}

export interface OutboxRow {
  /** Its place in the outbox: a session's events go in this order. */
  seq: number;
  /** The `webhook-id` of every attempt. */
  id: string;
  sid: string;
  type: WebhookEvent;
  /** The body, as sent: `{type, timestamp, data}`. */
  body: string;
  created_at: number;
  attempts: number;
  next_at: number;
  status: 'pending' | 'failed';
  /** The URLs that answered 2xx already, as JSON (a retry goes to the others). */
  delivered_to: string;
  last_error: string | null;
}

export interface Outbox {
  /** Each session's oldest pending event, when its time has come: one session's events go in order. */
  ready(nowMs: number, limit: number): Promise<OutboxRow[]>;
  /** When the next pending event is due, or null. */
  nextDue(): Promise<number | null>;
  delivered(seq: number): Promise<void>;
  retry(seq: number, attempts: number, nextAt: number, deliveredTo: string, error: string): Promise<void>;
  failed(seq: number, attempts: number, error: string): Promise<void>;
  /** What waits and what failed, for `.webhooks` and the metrics. */
  list(): Promise<OutboxRow[]>;
  counts(): Promise<{ pending: number; failed: number }>;
}

/** Unique to this process: with the time and a count, an id no other process makes. */
const PROCESS_PART = randomBytes(6).toString('base64url');
let made = 0;

/** An event's id: what every attempt of it carries as `webhook-id`. */
export function outboxId(): string {
  made = (made + 1) % 1_679_616;
  return `msg_${Date.now().toString(36)}${made.toString(36).padStart(4, '0')}${PROCESS_PART}`;
}

export const OUTBOX_COLUMNS = 'seq, id, sid, type, body, created_at, attempts, next_at, status, delivered_to, last_error';

/** Each session's oldest pending event: what may be sent next (a session's events go in order). */
const SESSION_HEADS = "SELECT min(seq) FROM webhook_outbox WHERE status = 'pending' GROUP BY sid";

/**
 * Each session's oldest pending event, when its time has come (`$1` now, `$2` how many): a
 * session's next event waits until the one before it is delivered or has failed.
 */
export const READY_SQL = `SELECT ${OUTBOX_COLUMNS} FROM webhook_outbox WHERE seq IN (${SESSION_HEADS}) AND next_at <= $1 ORDER BY seq LIMIT $2`;

/** When the next of those is due: an event behind one that waits for its retry waits with it. */
export const NEXT_DUE_SQL = `SELECT min(next_at) AS next FROM webhook_outbox WHERE seq IN (${SESSION_HEADS})`;
