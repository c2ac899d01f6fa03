// The webhook outbox in PostgreSQL (persistence/outbox.ts), on the side pool.
import { AGENT_FACT_SQL, BACKLOGS_SQL, FAN_OUT_BATCH, LIST_SQL, NEXT_DUE_SQL, READY_SQL, REQUEST_FACTS_SQL, TURN_FACTS_SQL, type DeliveryOutcomes, type DeliveryRow, type EventFacts, type Outbox, type OutboxEvent, type UrlBacklog } from '../outbox.js';
import type { SideQuery } from './side-query.js';

/**
 * The oldest events leave the outbox and become one delivery per URL (`$1`), in one statement.
 * `FOR UPDATE` (not SKIP LOCKED): a second node's fan-out waits for the first's rows instead of
 * taking later ones, so a session's deliveries are numbered in the order of its events.
 */
const FAN_OUT_SQL = `WITH moved AS (
    DELETE FROM webhook_outbox WHERE seq IN (SELECT seq FROM webhook_outbox ORDER BY seq LIMIT ${FAN_OUT_BATCH} FOR UPDATE)
    RETURNING seq, sid, type, ref, detail, created_at, delivered_to
  ), made AS (
    INSERT INTO webhook_deliveries (url, sid, type, ref, detail, created_at)
    SELECT u.url, m.sid, m.type, m.ref, m.detail, m.created_at
    FROM moved m CROSS JOIN unnest($1::text[]) WITH ORDINALITY AS u(url, n)
    WHERE NOT (m.delivered_to::jsonb ? u.url)
    ORDER BY m.seq, u.n
  )
  SELECT count(*)::int AS n FROM moved`;

export class PostgresOutbox implements Outbox {
  constructor(private readonly rows: SideQuery) {}

  async fanOut(urls: readonly string[]): Promise<number> {
    return (await this.rows<{ n: number }>(FAN_OUT_SQL, [urls])).rows[0]?.n ?? 0;
  }

  async ready(url: string, nowMs: number, limit: number): Promise<DeliveryRow[]> {
    return (await this.rows<DeliveryRow>(READY_SQL, [url, nowMs, limit])).rows;
  }

  async facts(event: OutboxEvent): Promise<EventFacts> {
    const agent = (await this.rows<{ agent: string | null }>(AGENT_FACT_SQL, [event.sid])).rows[0]?.agent ?? null;
    if (event.type === 'request.open') return { agent, request: (await this.rows<NonNullable<EventFacts['request']>>(REQUEST_FACTS_SQL, [event.ref])).rows[0] };
    return { agent, turn: (await this.rows<NonNullable<EventFacts['turn']>>(TURN_FACTS_SQL, [event.ref, event.sid])).rows[0] };
  }

  async nextDue(url: string): Promise<number | null> {
    return (await this.rows<{ next: number | null }>(NEXT_DUE_SQL, [url])).rows[0]?.next ?? null;
  }

  /** One statement: the delivered rows go, the others are moved on (`$1` the delivered ids, `$2` the rest as JSON). */
  async settle(outcomes: DeliveryOutcomes): Promise<void> {
    const movedOn = [...outcomes.retried.map((r) => ({ ...r, status: 'pending' })), ...outcomes.failed.map((f) => ({ ...f, nextAt: 0, status: 'failed' }))];
    await this.rows(
      `WITH gone AS (DELETE FROM webhook_deliveries WHERE id = ANY($1::bigint[]))
       UPDATE webhook_deliveries d SET attempts = m.attempts, next_at = m.next_at, last_error = m.error, status = m.status
       FROM jsonb_to_recordset($2::jsonb) AS m(id bigint, attempts int, next_at bigint, error text, status text) WHERE d.id = m.id`,
      [outcomes.delivered, JSON.stringify(movedOn.map((m) => ({ id: m.id, attempts: m.attempts, next_at: m.nextAt, error: m.error, status: m.status })))],
    );
  }

  async list(): Promise<DeliveryRow[]> {
    return (await this.rows<DeliveryRow>(LIST_SQL)).rows;
  }

  async backlogs(): Promise<UrlBacklog[]> {
    return (await this.rows<UrlBacklog>(BACKLOGS_SQL)).rows.map((b) => ({ url: b.url, pending: Number(b.pending), failed: Number(b.failed) }));
  }
}
