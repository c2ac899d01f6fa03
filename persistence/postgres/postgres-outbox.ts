// The webhook outbox in PostgreSQL (persistence/outbox.ts), on the side pool.
import { NEXT_DUE_SQL, OUTBOX_COLUMNS, READY_SQL, REQUEST_FACTS_SQL, TURN_FACTS_SQL, type EventFacts, type Outbox, type OutboxRow } from '../outbox.js';
import type { SideQuery } from './postgres-side.js';

export class PostgresOutbox implements Outbox {
  constructor(private readonly rows: SideQuery) {}

  async ready(nowMs: number, limit: number): Promise<OutboxRow[]> {
    return (await this.rows<OutboxRow>(READY_SQL, [nowMs, limit])).rows;
  }

  async facts(row: OutboxRow): Promise<EventFacts> {
    if (row.type === 'request.open') return { request: (await this.rows<NonNullable<EventFacts['request']>>(REQUEST_FACTS_SQL, [row.ref])).rows[0] };
    return { turn: (await this.rows<NonNullable<EventFacts['turn']>>(TURN_FACTS_SQL, [row.ref, row.sid])).rows[0] };
  }

  async nextDue(): Promise<number | null> {
    return (await this.rows<{ next: number | null }>(NEXT_DUE_SQL)).rows[0]?.next ?? null;
  }

  async delivered(seqs: readonly number[]): Promise<void> {
    await this.rows('DELETE FROM webhook_outbox WHERE seq = ANY($1::bigint[])', [seqs]);
  }

  async retry(seq: number, attempts: number, nextAt: number, deliveredTo: string, error: string): Promise<void> {
    await this.rows('UPDATE webhook_outbox SET attempts = $1, next_at = $2, delivered_to = $3, last_error = $4 WHERE seq = $5', [attempts, nextAt, deliveredTo, error, seq]);
  }

  async failed(seq: number, attempts: number, error: string): Promise<void> {
    await this.rows("UPDATE webhook_outbox SET status = 'failed', attempts = $1, last_error = $2 WHERE seq = $3", [attempts, error, seq]);
  }

  async list(): Promise<OutboxRow[]> {
    return (await this.rows<OutboxRow>(`SELECT ${OUTBOX_COLUMNS} FROM webhook_outbox ORDER BY seq`)).rows;
  }

  async counts(): Promise<{ pending: number; failed: number }> {
    const rows = (await this.rows<{ status: string; n: number }>('SELECT status, count(*)::int AS n FROM webhook_outbox GROUP BY status')).rows;
    return { pending: rows.find((r) => r.status === 'pending')?.n ?? 0, failed: rows.find((r) => r.status === 'failed')?.n ?? 0 };
  }
}
