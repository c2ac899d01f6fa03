// The side store of a SQLite home (persistence/side-store.ts): its own connection to the home's
// database, beside the host's.
import { chmodSync } from 'node:fs';
import Database from 'better-sqlite3';
import type { SideStore } from '../side-store.js';
import { SqliteOutbox } from './sqlite-outbox.js';
import { SqlitePeople } from './sqlite-people.js';
import { SqliteSchedules } from './sqlite-schedules.js';
import { migrate } from './schema.js';

export function openSqliteSide(file: string): SideStore {
  const db = new Database(file);
  chmodSync(file, 0o600);
  db.pragma('journal_mode = WAL');
  // As the host's connection: a commit survives the process at once, and a power loss once the
  // WAL is synced (the host syncs it every 100 ms, this connection's frames with its own). A sync
  // per commit here held the host's commits behind it: a webhook cost a daemon 70% of its turns.
  db.pragma('synchronous = NORMAL');
  db.pragma('busy_timeout = 5000');
  migrate(db);
  return {
    people: new SqlitePeople(db),
    schedules: new SqliteSchedules(db),
    outbox: new SqliteOutbox(db),
    close: async () => void db.close(),
  };
}
