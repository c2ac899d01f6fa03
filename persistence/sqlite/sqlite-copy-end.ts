// A SQLite database as one side of a store copy (persistence/store-copy.ts): read in key order
// (`submits` by rowid), written a batch per transaction with INSERT OR IGNORE.
import type Database from 'better-sqlite3';
import { DIGEST_COLUMNS, type Batch, type CopiedTable, type CopyEnd } from '../store-copy.js';
import { openWritingConnection } from './sqlite-side.js';

const ORDINAL = 'rowid';

export function openSqliteCopyEnd(file: string): CopyEnd {
  const db = openWritingConnection(file);
  const inserts = new Map<string, Database.Statement>();
  return {
    shown: `sqlite ${file}`,
    columns: async (table) => (db.prepare(`SELECT name FROM pragma_table_info(?)`).all(table) as { name: string }[]).map((row) => row.name),
    count: async (table) => (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n,
    read: async (table, columns, after, limit) => readBatch(db, table, columns, after, limit),
    write: async (table, columns, rows) => {
      const key = `${table}\n${columns.join(',')}`;
      let insert = inserts.get(key);
      if (insert === undefined) inserts.set(key, (insert = db.prepare(`INSERT OR IGNORE INTO ${table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`)));
      const statement = insert;
      db.transaction(() => {
        for (const row of rows) statement.run(...row.map(sqliteValue));
      })();
    },
    finish: async () => {},
    messages: async (after, limit) => readBatch(db, { name: 'messages', key: ['sid', 'seq'] }, DIGEST_COLUMNS, after, limit),
    close: async () => void db.close(),
  };
}

function readBatch(db: Database.Database, table: CopiedTable, columns: readonly string[], after: unknown[] | null, limit: number): Batch {
  const key = table.key === 'ordinal' ? [ORDINAL] : table.key;
  const where = after === null ? '' : `WHERE (${key.join(', ')}) > (${key.map(() => '?').join(', ')})`;
  const rows = db
    .prepare(`SELECT ${[...columns, ...key].join(', ')} FROM ${table.name} ${where} ORDER BY ${key.join(', ')} LIMIT ${limit}`)
    .raw()
    .all(...(after ?? [])) as unknown[][];
  const last = rows.at(-1);
  return { rows: rows.map((row) => row.slice(0, columns.length)), next: rows.length < limit || last === undefined ? null : last.slice(columns.length) };
}

/** PostgreSQL's booleans as SQLite keeps them. */
function sqliteValue(value: unknown): unknown {
  return typeof value === 'boolean' ? (value ? 1 : 0) : value;
}
