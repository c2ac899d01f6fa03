// The side store of a SQLite home (persistence/side-store.ts): its own connection to the home's
// database, beside the host's.
import { chmodSync } from 'node:fs';
import Database from 'better-sqlite3';
import type { ForkMade, SideStore } from '../side-store.js';
import { FORK_SQL } from '../session-line.js';
import { SqliteOutbox } from './sqlite-outbox.js';
import { SqlitePeople } from './sqlite-people.js';
import { SqliteSchedules } from './sqlite-schedules.js';
import { migrate } from './schema.js';
import { numberedQuery } from './numbered-query.js';
import { SqlLedger } from '../ledger.js';
import { SessionFlags } from '../session-flags.js';

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
  const fork = db.prepare(FORK_SQL);
  return {
    fork: async (request, now = Date.now()) => (fork.get({ 1: request.sid, 2: request.sessionKey, 3: request.cwd, 4: now, 5: request.source, 6: request.atTurnId, 7: request.agent }) as ForkMade | undefined) ?? null,
    people: new SqlitePeople(db),
    schedules: new SqliteSchedules(db),
    outbox: new SqliteOutbox(db),
    ledger: new SqlLedger(numberedQuery(db)),
    flags: new SessionFlags(numberedQuery(db)),
    close: async () => void db.close(),
  };
}
