// The webhook outbox in a SQLite home (persistence/outbox.ts), as the daemon reads and moves it on
// the side connection; the host adds rows with its own commits (store-writer.ts).
import type Database from 'better-sqlite3';
import { AGENT_FACT_SQL, BACKLOGS_SQL, FAN_OUT_BATCH, LIST_SQL, NEXT_DUE_SQL, READY_SQL, REQUEST_FACTS_SQL, TURN_FACTS_SQL, type DeliveryOutcomes, type DeliveryRow, type EventFacts, type Outbox, type OutboxEvent, type UrlBacklog } from '../outbox.js';

/**
 * The oldest events of the outbox, each once per URL (`?` the URLs as JSON) but for the URLs that
 * took it before delivery was per URL (`delivered_to`), in the outbox's order: a session's events
 * keep their order in every URL's stream.
 */
const FAN_OUT_SQL = `INSERT INTO webhook_deliveries (url, sid, type, ref, detail, created_at)
  SELECT u.value, o.sid, o.type, o.ref, o.detail, o.created_at
  FROM (SELECT * FROM webhook_outbox ORDER BY seq LIMIT ${FAN_OUT_BATCH}) o, json_each(?) u
  WHERE u.value NOT IN (SELECT value FROM json_each(o.delivered_to))
  ORDER BY o.seq, u.key`;

export class SqliteOutbox implements Outbox {
  /** The statements of each delivery, prepared once (a prepare per call was a tenth of the delivery's work). */
  private readonly statements;
  private readonly fanOutNow;
  private readonly settleNow;

  constructor(private readonly db: Database.Database) {
    this.statements = {
      lastOfBatch: db.prepare(`SELECT max(seq) AS last, count(*) AS n FROM (SELECT seq FROM webhook_outbox ORDER BY seq LIMIT ${FAN_OUT_BATCH})`),
      fanOut: db.prepare(FAN_OUT_SQL),
      moved: db.prepare('DELETE FROM webhook_outbox WHERE seq <= ?'),
      ready: db.prepare(READY_SQL),
      request: db.prepare(REQUEST_FACTS_SQL),
      turn: db.prepare(TURN_FACTS_SQL),
      agent: db.prepare(AGENT_FACT_SQL),
      nextDue: db.prepare(NEXT_DUE_SQL),
      delivered: db.prepare('DELETE FROM webhook_deliveries WHERE id IN (SELECT value FROM json_each(?))'),
      retry: db.prepare('UPDATE webhook_deliveries SET attempts = ?, next_at = ?, last_error = ? WHERE id = ?'),
      failed: db.prepare("UPDATE webhook_deliveries SET status = 'failed', attempts = ?, last_error = ? WHERE id = ?"),
    };
    // Immediate: the host's commits wait for this write rather than slip an event in between the
    // read of the batch and its removal.
    this.fanOutNow = db.transaction((urls: string) => {
      const batch = this.statements.lastOfBatch.get() as { last: number | null; n: number };
      if (batch.last === null) return 0;
      this.statements.fanOut.run(urls);
      this.statements.moved.run(batch.last);
      return batch.n;
    }).immediate;
    this.settleNow = db.transaction((outcomes: DeliveryOutcomes) => {
      if (outcomes.delivered.length > 0) this.statements.delivered.run(JSON.stringify(outcomes.delivered));
      for (const r of outcomes.retried) this.statements.retry.run(r.attempts, r.nextAt, r.error, r.id);
      for (const f of outcomes.failed) this.statements.failed.run(f.attempts, f.error, f.id);
    });
  }

  async fanOut(urls: readonly string[]): Promise<number> {
    return this.fanOutNow(JSON.stringify(urls));
  }

  async ready(url: string, nowMs: number, limit: number): Promise<DeliveryRow[]> {
    // `$1`…: SQLite takes them as named parameters, bound by their numbers.
    return this.statements.ready.all({ 1: url, 2: nowMs, 3: limit }) as DeliveryRow[];
  }

  async facts(event: OutboxEvent): Promise<EventFacts> {
    const agent = (this.statements.agent.get({ 1: event.sid }) as { agent: string | null } | undefined)?.agent ?? null;
    if (event.type === 'request.open') return { agent, request: this.statements.request.get({ 1: event.ref }) as EventFacts['request'] };
    return { agent, turn: this.statements.turn.get({ 1: event.ref, 2: event.sid }) as EventFacts['turn'] };
  }

  async nextDue(url: string): Promise<number | null> {
    return (this.statements.nextDue.get({ 1: url }) as { next: number | null }).next;
  }

  async settle(outcomes: DeliveryOutcomes): Promise<void> {
    this.settleNow(outcomes);
  }

  async list(): Promise<DeliveryRow[]> {
    return this.db.prepare(LIST_SQL).all() as DeliveryRow[];
  }

  async backlogs(): Promise<UrlBacklog[]> {
    return this.db.prepare(BACKLOGS_SQL).all() as UrlBacklog[];
  }
}
