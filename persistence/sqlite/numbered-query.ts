// SQL shared with PostgreSQL (`$n` parameters) run on a SQLite connection: each text prepared once.
import type Database from 'better-sqlite3';
import type { NumberedQuery } from '../ledger.js';

export function numberedQuery(db: Database.Database): NumberedQuery {
  const prepared = new Map<string, Database.Statement>();
  return async <R>(sql: string, params: readonly unknown[]): Promise<R[]> => {
    let statement = prepared.get(sql);
    if (statement === undefined) prepared.set(sql, (statement = db.prepare(sql)));
    const bound = Object.fromEntries(params.map((value, i) => [i + 1, value]));
    if (!statement.reader) {
      statement.run(bound);
      return [];
    }
    return statement.all(bound) as R[];
  };
}
