// The webhook outbox in a SQLite home (persistence/outbox.ts), as the daemon reads and moves it on
// the side connection; the host adds rows with its own commits (store-writer.ts).
import type Database from 'better-sqlite3';
import { NEXT_DUE_SQL, OUTBOX_COLUMNS, READY_SQL, REQUEST_FACTS_SQL, TURN_FACTS_SQL, type EventFacts, type Outbox, type OutboxRow } from '../outbox.js';

export class SqliteOutbox implements Outbox {
  /** The statements of each delivery, prepared once (a prepare per call was a tenth of the delivery's work). */
  private readonly statements;

  constructor(private readonly db: Database.Database) {
    this.statements = {
      ready: db.prepare(READY_SQL),
      request: db.prepare(REQUEST_FACTS_SQL),
      turn: db.prepare(TURN_FACTS_SQL),
      nextDue: db.prepare(NEXT_DUE_SQL),
      delivered: db.prepare('DELETE FROM webhook_outbox WHERE seq IN (SELECT value FROM json_each(?))'),
    };
  }

  async ready(nowMs: number, limit: number): Promise<OutboxRow[]> {
    // `$1`, `$2`: SQLite takes them as named parameters, bound by their numbers.
    return this.statements.ready.all({ 1: nowMs, 2: limit }) as OutboxRow[];
  }

  async facts(row: OutboxRow): Promise<EventFacts> {
    if (row.type === 'request.open') return { request: this.statements.request.get({ 1: row.ref }) as EventFacts['request'] };
    return { turn: this.statements.turn.get({ 1: row.ref, 2: row.sid }) as EventFacts['turn'] };
  }

  async nextDue(): Promise<number | null> {
    return (this.statements.nextDue.get() as { next: number | null }).next;
  }

  async delivered(seqs: readonly number[]): Promise<void> {
    this.statements.delivered.run(JSON.stringify(seqs));
  }

  async retry(seq: number, attempts: number, nextAt: number, deliveredTo: string, error: string): Promise<void> {
    this.db.prepare('UPDATE webhook_outbox SET attempts = ?, next_at = ?, delivered_to = ?, last_error = ? WHERE seq = ?').run(attempts, nextAt, deliveredTo, error, seq);
  }

  async failed(seq: number, attempts: number, error: string): Promise<void> {
    this.db.prepare("UPDATE webhook_outbox SET status = 'failed', attempts = ?, last_error = ? WHERE seq = ?").run(attempts, error, seq);
  }

  async list(): Promise<OutboxRow[]> {
    return this.db.prepare(`SELECT ${OUTBOX_COLUMNS} FROM webhook_outbox ORDER BY seq`).all() as OutboxRow[];
  }

  async counts(): Promise<{ pending: number; failed: number }> {
    const rows = this.db.prepare('SELECT status, count(*) AS n FROM webhook_outbox GROUP BY status').all() as { status: string; n: number }[];
    return { pending: rows.find((r) => r.status === 'pending')?.n ?? 0, failed: rows.find((r) => r.status === 'failed')?.n ?? 0 };
  }
}
