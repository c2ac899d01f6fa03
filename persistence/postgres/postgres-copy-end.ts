// A PostgreSQL store as one side of a store copy (persistence/store-copy.ts): read in key order
// (`submits` by its serial `ord`), written a batch per transaction (bulk-insert.ts) with ON
// CONFLICT DO NOTHING; the serials set past the rows copied, so new rows take new numbers.
import pg from 'pg';
import { DIGEST_COLUMNS, type Batch, type CopiedTable, type CopyEnd } from '../store-copy.js';
import type { StoreLocation } from '../store-location.js';
import { bulkInsert, columnTypes } from './bulk-insert.js';
import { clientConfig, described } from './connection.js';
import { migrate, SCHEMA } from './schema.js';

const ORDINAL = 'ord';

export async function openPostgresCopyEnd(location: Extract<StoreLocation, { kind: 'postgres' }>): Promise<CopyEnd> {
  const client = new pg.Client(clientConfig(location, 'store copy'));
  try {
    await client.connect();
    await migrate(client);
  } catch (err) {
    await client.end().catch(() => {});
    throw described(err as Error);
  }
  const types = new Map<string, Map<string, string>>();
  const typesOf = async (table: string) => {
    let known = types.get(table);
    if (known === undefined) types.set(table, (known = await columnTypes(client, table)));
    return known;
  };
  // One connection: its statements go one after another, whoever asks at once.
  let queue: Promise<unknown> = Promise.resolve();
  const query = (text: string, values: unknown[] = []): Promise<pg.QueryArrayResult> => {
    const run = queue.then(() => client.query({ text, values, rowMode: 'array' })).catch((err: Error) => {
      throw described(err);
    });
    queue = run.catch(() => {});
    return run;
  };
  return {
    shown: location.shown,
    columns: async (table) => [...(await typesOf(table)).keys()],
    count: async (table) => Number((await query(`SELECT count(*) FROM ${table}`)).rows[0]![0]),
    read: async (table, columns, after, limit) => readBatch(query, table, columns, after, limit),
    write: async (table, columns, rows) => {
      const typed = await typesOf(table);
      const converted = rows.map((row) => row.map((value, i) => postgresValue(value, typed.get(columns[i]!))));
      await query('BEGIN');
      try {
        await bulkInsert(client, table, columns, converted, typed, true);
        await query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {});
        throw described(err as Error);
      }
    },
    finish: async (table) => {
      // A serial key copied as it was: its sequence goes past the largest, for the rows to come.
      for (const [column] of await typesOf(table)) {
        const sequence = (await query('SELECT pg_get_serial_sequence($1, $2)', [`${SCHEMA}.${table}`, column])).rows[0]![0];
        if (sequence !== null) await query(`SELECT setval($1, GREATEST((SELECT COALESCE(MAX(${column}), 0) FROM ${table}), 1))`, [sequence]);
      }
    },
    messages: async (after, limit) => readBatch(query, { name: 'messages', key: ['sid', 'seq'] }, DIGEST_COLUMNS, after, limit),
    close: () => client.end(),
  };
}

type ArrayQuery = (text: string, values?: unknown[]) => Promise<pg.QueryArrayResult>;

async function readBatch(query: ArrayQuery, table: CopiedTable, columns: readonly string[], after: unknown[] | null, limit: number): Promise<Batch> {
  const key = table.key === 'ordinal' ? [ORDINAL] : table.key;
  const where = after === null ? '' : `WHERE (${key.join(', ')}) > (${key.map((_, i) => `$${i + 1}`).join(', ')})`;
  const { rows } = await query(`SELECT ${[...columns, ...key].join(', ')} FROM ${table.name} ${where} ORDER BY ${key.join(', ')} LIMIT ${limit}`, after ?? []);
  const last = rows.at(-1);
  return { rows: rows.map((row) => row.slice(0, columns.length)), next: rows.length < limit || last === undefined ? null : last.slice(columns.length) };
}

/** SQLite's integers as PostgreSQL's booleans where the column is one. */
function postgresValue(value: unknown, type: string | undefined): unknown {
  return type === 'bool' && typeof value === 'number' ? value !== 0 : value;
}
