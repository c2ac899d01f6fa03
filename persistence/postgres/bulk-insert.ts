// Many rows into one table in few statements: each column goes as one array parameter, unnested
// (`INSERT … SELECT * FROM unnest($1::text[], $2::bigint[], …)`), so a batch is one round trip
// whatever its rows, and no statement nears PostgreSQL's 65,535 parameters. The arrays are cast to
// the column types the server reports. Used by an import and by `store copy` (PROTOCOL.md §2.3).
import type pg from 'pg';
import { SCHEMA } from './schema.js';

/** Rows per statement: a batch of messages of a few KiB each stays a few MiB. */
export const BULK_BATCH_ROWS = 2000;

/** What a table's columns are, as the server names their types (`int8`, `text`, `bytea`, `bool`). */
export async function columnTypes(client: pg.ClientBase, table: string): Promise<Map<string, string>> {
  const { rows } = await client.query<{ column_name: string; udt_name: string }>('SELECT column_name, udt_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2', [SCHEMA, table]);
  return new Map(rows.map((row) => [row.column_name, row.udt_name]));
}

/**
 * Inserts `rows` (each the `columns`, in order) in batches; `skipTaken`: a row whose key is
 * already there is left as it is (a copy run again). Returns how many rows went in.
 */
export async function bulkInsert(client: pg.ClientBase, table: string, columns: readonly string[], rows: readonly unknown[][], types: Map<string, string>, skipTaken = false): Promise<number> {
  const casts = columns.map((column, i) => {
    const type = types.get(column);
    if (type === undefined) throw new Error(`${table} has no column ${column}`);
    return `$${i + 1}::${type}[]`;
  });
  const text = `INSERT INTO ${table} (${columns.join(', ')}) SELECT * FROM unnest(${casts.join(', ')})${skipTaken ? ' ON CONFLICT DO NOTHING' : ''}`;
  let inserted = 0;
  for (let start = 0; start < rows.length; start += BULK_BATCH_ROWS) {
    const batch = rows.slice(start, start + BULK_BATCH_ROWS);
    const arrays = columns.map((_, i) => batch.map((row) => row[i] ?? null));
    inserted += (await client.query(text, arrays)).rowCount ?? 0;
  }
  return inserted;
}
