// The side store of a PostgreSQL store (persistence/side-store.ts): the schema brought up to date
// once, then a small pool of its own.
import pg from 'pg';
import type { ForkMade, ForkRequest, SideStore } from '../side-store.js';
import { Blobs, FORK_BLOBS_SQL } from '../blobs.js';
import { SqlLedger } from '../ledger.js';
import { SessionFlags } from '../session-flags.js';
import { IMPORT_CHECK_SQL, IMPORT_COLUMNS, importedBlobStatements, importMade, importRefusal, importRows, ImportRefused, type ImportMade, type ImportPlan, type ImportRequest } from '../session-export.js';
import { bulkInsert, columnTypes } from './bulk-insert.js';
import { FORK_LOCK_SQL, FORK_SQL } from '../session-line.js';
import type { StoreLocation } from '../store-location.js';
import { clientConfig, described, readPool } from './connection.js';
import { PostgresOutbox } from './postgres-outbox.js';
import { PostgresPeople } from './postgres-people.js';
import { PostgresSchedules } from './postgres-schedules.js';
import { migrate } from './schema.js';
import type { SideQuery } from './side-query.js';

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
  const rows = async <R>(text: string, values: readonly unknown[]): Promise<R[]> => (await query(text, [...values])).rows as R[];
  return {
    fork: (request, now = Date.now()) => forkHeld(pool, request, now),
    people: new PostgresPeople(query),
    schedules: new PostgresSchedules(query),
    outbox: new PostgresOutbox(query),
    ledger: new SqlLedger(rows),
    blobs: new Blobs(rows),
    flags: new SessionFlags(rows),
    importSession: (plan, request, now = Date.now()) => importInto(pool, plan, request, now),
    close: () => pool.end(),
  };
}

/**
 * A fork in a transaction that holds the source's row before its statement reads the line: a
 * rewind of the source commits wholly before it or after it (REWIND_SQL.holdSession), never while
 * it reads rows the rewind moves.
 */
async function forkHeld(pool: pg.Pool, request: ForkRequest, now: number): Promise<ForkMade | null> {
  const client = await pool.connect().catch((err: Error) => {
    throw described(err);
  });
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    await client.query(FORK_LOCK_SQL, [request.source]);
    const made = await client.query<ForkMade>(FORK_SQL, [request.sid, request.sessionKey, request.cwd, now, request.source, request.atTurnId, request.agent]);
    if (made.rows[0] !== undefined) await client.query(FORK_BLOBS_SQL, [request.sid, request.source]);
    await client.query('COMMIT');
    return made.rows[0] ?? null;
  } catch (err) {
    broken = err as Error;
    await client.query('ROLLBACK').catch(() => {});
    throw described(broken);
  } finally {
    // A connection whose transaction failed is not given back to the pool: its state is unknown.
    client.release(broken);
  }
}

/** One transaction: the checks, then every row in batches; nothing is written when any of it fails. */
async function importInto(pool: pg.Pool, plan: ImportPlan, request: ImportRequest, now: number): Promise<ImportMade> {
  const client = await pool.connect().catch((err: Error) => {
    throw described(err);
  });
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    if ((await client.query(IMPORT_CHECK_SQL.taken, [request.sid])).rowCount !== 0) throw importRefusal(request.sid);
    const taken = await client.query('SELECT 1 FROM turns WHERE turn_id = ANY($1) LIMIT 1', [plan.turns.map((turn) => turn.turn_id)]);
    const renamed = taken.rowCount !== 0;
    const rows = importRows(plan, request.sid, request.sessionKey, now, renamed);
    for (const table of ['sessions', 'turns', 'messages'] as const) await bulkInsert(client, table, IMPORT_COLUMNS[table], rows[table], await columnTypes(client, table));
    if (request.owner !== null) await client.query(IMPORT_CHECK_SQL.owner, [request.sid, request.owner]);
    for (const { sql, params } of importedBlobStatements(plan, request.sid, now)) await client.query(sql, params);
    await client.query('COMMIT');
    return importMade(plan, request.sid, renamed);
  } catch (err) {
    broken = err as Error;
    await client.query('ROLLBACK').catch(() => {});
    throw err instanceof ImportRefused ? err : described(broken);
  } finally {
    client.release(broken);
  }
}
