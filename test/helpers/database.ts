// Read-only looks at a home's database, as an operator with sqlite3 would take them.
import { join } from 'node:path';
import Database from 'better-sqlite3';

export function readDatabase<T>(home: string, read: (db: Database.Database) => T): T {
  const db = new Database(join(home, 'turnhost.db'), { readonly: true });
  try {
    return read(db);
  } finally {
    db.close();
  }
}
