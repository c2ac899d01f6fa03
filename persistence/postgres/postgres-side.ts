// The side store of a PostgreSQL store (persistence/side-store.ts): the schema brought up to date
// once, then a small pool of its own.
import pg from 'pg';
import type { ForkMade, SideStore } from '../side-store.js';
import { SqlLedger } from '../ledger.js';
import { FORK_SQL } from '../session-line.js';
import type { StoreLocation } from '../store-location.js';
import { clientConfig, described, readPool } from './connection.js';
import { PostgresOutbox } from './postgres-outbox.js';
import { PostgresPeople } from './postgres-people.js';
import { PostgresSchedules } from './postgres-schedules.js';
import { migrate } from './schema.js';

/** A statement on the side pool; its error names the table and the SQLSTATE, never the password. */
export type SideQuery = <R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]) => Promise<pg.QueryResult<R>>;

export async function openPostgresSide(location: Extract<StoreLocation, { kind: 'postgres' }>): Promise<SideStore> {
  const client = new pg.Client(clientConfig(location, 'side'));
  try {
    await client.connect();
    await migrate(client);
  } catch (err) {
    throw described(err as Error);
  } finally {
    await client.end().catch(() => {});
  }
  const pool = readPool(location);
  const query: SideQuery = async (text, values = []) => {
    try {
      return await pool.query(text, values);
    } catch (err) {
      throw described(err as Error);
    }
  };
  return {
    fork: async (request, now = Date.now()) =>
      (await query<ForkMade>(FORK_SQL, [request.sid, request.sessionKey, request.cwd, now, request.source, request.atTurnId])).rows[0] ?? null,
    people: new PostgresPeople(query),
    schedules: new PostgresSchedules(query),
    outbox: new PostgresOutbox(query),
    ledger: new SqlLedger(async <R>(text: string, values: readonly unknown[]) => (await query(text, [...values])).rows as R[]),
    close: () => pool.end(),
  };
}
