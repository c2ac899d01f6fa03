// Which store the integration tests run on: SQLite in each home (the default), or PostgreSQL with
// TURNHOST_TEST_STORE=postgres, which `npm run test:postgres` sets (test/postgres-matrix.ts starts
// the server and makes the databases; each home claims one of its own, whichever worker runs it).
// The tests read what the host stored through storeRows, written in SQL both stores take (`?`
// placeholders).
import { closeSync, openSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { types } from '../../persistence/postgres/connection.js';

export const TEST_STORE: 'sqlite' | 'postgres' = process.env['TURNHOST_TEST_STORE'] === 'postgres' ? 'postgres' : 'sqlite';
/** The server's URL without a database; databases h0, h1, … exist on it. */
const SERVER_URL = process.env['TURNHOST_TEST_PG'] ?? '';
const DATABASES = Number(process.env['TURNHOST_TEST_PG_DATABASES'] ?? 0);
/** A folder where each database is claimed by a file of its number: files side by side in several processes never take the same one. */
const CLAIMS = process.env['TURNHOST_TEST_PG_CLAIMS'] ?? '';

const databaseOf = new Map<string, string>();

/** The environment a process of this home runs with: on PostgreSQL, the home's own database. */
export function storeEnv(home: string | undefined): NodeJS.ProcessEnv {
  if (TEST_STORE === 'sqlite' || home === undefined) return {};
  let url = databaseOf.get(home);
  if (url === undefined) {
    url = `${SERVER_URL}/h${claimDatabase()}`;
    databaseOf.set(home, url);
  }
  return { TURNHOST_STORE: url };
}

/** The first database no process has claimed; creating its file with 'wx' is the claim, atomic across processes. */
function claimDatabase(): number {
  for (let i = 0; i < DATABASES; i++) {
    try {
      closeSync(openSync(join(CLAIMS, String(i)), 'wx'));
      return i;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
  throw new Error(`the PostgreSQL matrix made ${DATABASES} databases and the tests want more homes: raise it in test/postgres-matrix.ts`);
}

/** Rows of a query on what the home's host stored, on whichever store the tests run. */
export function storeRows<R>(home: string, sql: string, params: unknown[] = []): Promise<R[]> {
  return onStore<R>(home, sql, params, true);
}

/** A statement that writes behind the host's back (what a commit it was told failed left), on whichever store. */
export async function storeWrite(home: string, sql: string, params: unknown[] = []): Promise<void> {
  await onStore(home, sql, params, false);
}

async function onStore<R>(home: string, sql: string, params: unknown[], readonly: boolean): Promise<R[]> {
  if (TEST_STORE === 'sqlite') {
    const db = new Database(join(home, 'turnhost.db'), { readonly });
    try {
      const statement = db.prepare(sql);
      if (!readonly) {
        statement.run(...params);
        return [];
      }
      return statement.all(...params) as R[];
    } finally {
      db.close();
    }
  }
  let n = 0;
  const client = new pg.Client({ connectionString: storeEnv(home)['TURNHOST_STORE'], options: '-c search_path=turnhost', types });
  await client.connect();
  try {
    return (await client.query(sql.replace(/\?/g, () => `$${++n}`), params)).rows as R[];
  } finally {
    await client.end();
  }
}
