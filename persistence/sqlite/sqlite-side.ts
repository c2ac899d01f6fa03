// The side store of a SQLite home (persistence/side-store.ts): its own connection to the home's
// database, beside the host's.
import { chmodSync } from 'node:fs';
import Database from 'better-sqlite3';
import type { ForkMade, ForkRequest, SideStore } from '../side-store.js';
import { Blobs, FORK_BLOBS_SQL } from '../blobs.js';
import { FORK_SQL } from '../session-line.js';
import { SqliteOutbox } from './sqlite-outbox.js';
import { SqlitePeople } from './sqlite-people.js';
import { SqliteSchedules } from './sqlite-schedules.js';
import { migrate } from './schema.js';
import { numberedQuery } from './numbered-query.js';
import { SqlLedger } from '../ledger.js';
import { SessionFlags } from '../session-flags.js';
import { IMPORT_CHECK_SQL, IMPORT_COLUMNS, importedBlobStatements, importMade, importRefusal, importRows, type ImportMade, type ImportPlan, type ImportRequest } from '../session-export.js';

/** One transaction: the checks, then every row; nothing is written when any of it fails. */
function importInto(db: Database.Database, plan: ImportPlan, request: ImportRequest, now: number): ImportMade {
  const bound = (params: unknown[]) => Object.fromEntries(params.map((value, i) => [i + 1, value]));
  return db.transaction(() => {
    if (db.prepare(IMPORT_CHECK_SQL.taken).get(bound([request.sid])) !== undefined) throw importRefusal(request.sid);
    const turnTaken = db.prepare('SELECT 1 FROM turns WHERE turn_id = ?');
    const renamed = plan.turns.some((turn) => turnTaken.get(turn.turn_id) !== undefined);
    const rows = importRows(plan, request.sid, request.sessionKey, now, renamed);
    for (const table of ['sessions', 'turns', 'messages'] as const) {
      const columns = IMPORT_COLUMNS[table];
      const insert = db.prepare(`INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`);
      for (const row of rows[table]) insert.run(...row);
    }
    if (request.owner !== null) db.prepare(IMPORT_CHECK_SQL.owner).run(bound([request.sid, request.owner]));
    for (const { sql, params } of importedBlobStatements(plan, request.sid, now)) db.prepare(sql).run(bound(params));
    return importMade(plan, request.sid, renamed);
  }).immediate();
}

/** A connection that writes beside the host's (or, for a store copy, alone), the schema brought up to date. */
export function openWritingConnection(file: string): Database.Database {
  const db = new Database(file);
  chmodSync(file, 0o600);
  db.pragma('journal_mode = WAL');
  // As the host's connection: a commit survives the process at once, and a power loss once the
  // WAL is synced (the host syncs it every 100 ms, this connection's frames with its own). A sync
  // per commit here held the host's commits behind it: a webhook cost a daemon 70% of its turns.
  db.pragma('synchronous = NORMAL');
  db.pragma('busy_timeout = 5000');
  migrate(db);
  return db;
}

export function openSqliteSide(file: string): SideStore {
  const db = openWritingConnection(file);
  const fork = db.prepare(FORK_SQL);
  const forkBlobs = db.prepare(FORK_BLOBS_SQL);
  const forkWhole = db.transaction((request: ForkRequest, now: number): ForkMade | null => {
    const made = fork.get({ 1: request.sid, 2: request.sessionKey, 3: request.cwd, 4: now, 5: request.source, 6: request.atTurnId, 7: request.agent }) as ForkMade | undefined;
    if (made !== undefined) forkBlobs.run({ 1: request.sid, 2: request.source });
    return made ?? null;
  });
  return {
    fork: async (request, now = Date.now()) => forkWhole.immediate(request, now),
    people: new SqlitePeople(db),
    schedules: new SqliteSchedules(db),
    outbox: new SqliteOutbox(db),
    ledger: new SqlLedger(numberedQuery(db)),
    blobs: new Blobs(numberedQuery(db)),
    flags: new SessionFlags(numberedQuery(db)),
    importSession: async (plan, request, now = Date.now()) => importInto(db, plan, request, now),
    close: async () => void db.close(),
  };
}
