// `npm run bench -- life`: a session's life (PROTOCOL.md §2.3), each against a floor measured in
// the same run, on the same connection or server:
// - a delete of a 10,000-message session, through the host's own commit (StoreWriter.deleteSession),
//   beside a plain DELETE of an identical session's rows (its messages, turns and row); and of a
//   source with 10 forks of it (the line the forks read is kept for them). SQLite (the target) and
//   PostgreSQL.
// - an import of 100,000 messages (the file checked whole, then one transaction), beside a plain
//   bulk insert of the same rows: SQLite and PostgreSQL.
// - `turnhost store copy` of 1,000,000 messages from SQLite to PostgreSQL, the real command, beside
//   a plain copy of the same messages (read in batches, inserted without checks); its peak memory
//   beside that of a copy of 100,000 (flat: the same, whatever the size).
// Targets: 100 ms, 1 s, 10 s, 5 minutes.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { bulkInsert, columnTypes } from '../persistence/postgres/bulk-insert.js';
import { openPostgresSide } from '../persistence/postgres/postgres-side.js';
import { parseExport, IMPORT_COLUMNS, importRows, type ExportLine } from '../persistence/session-export.js';
import type { SideStore } from '../persistence/side-store.js';
import { openSqliteSide } from '../persistence/sqlite/sqlite-side.js';
import { SqliteStore } from '../persistence/sqlite/sqlite-store.js';
import { storeLocation, type StoreLocation } from '../persistence/store-location.js';
import { openStore } from '../persistence/open-store.js';
import type { Store } from '../persistence/store.js';
import { TestPostgres } from '../test/helpers/postgres.js';
import { CLI, median, printTable, round, ROUNDS, verdict, withTempDir, writeResult } from './common.js';

const DELETED_MESSAGES = 10_000;
const FORKS = 10;
const IMPORTED_MESSAGES = 100_000;
const COPIED_MESSAGES = 1_000_000;
const SMALL_COPY_MESSAGES = 100_000;
/** Sessions the copied store's messages are spread over. */
const COPIED_SESSIONS = 1000;
const TARGETS = { deleteMs: 100, deleteWithForksMs: 1000, importMs: 10_000, copyMs: 300_000 };

type PgLocation = Extract<StoreLocation, { kind: 'postgres' }>;

/** A session of `messages` messages, two a turn, each ended, as rows of the schema (sessions, turns, messages). */
function sessionRows(sid: string, messages: number): { session: unknown[]; turns: unknown[][]; messages: unknown[][] } {
  const turns: unknown[][] = [];
  const rows: unknown[][] = [];
  for (let turn = 0; turn < messages / 2; turn++) {
    const id = `${sid}-t${turn}`;
    turns.push([id, sid, 'completed', 0, 1]);
    rows.push([sid, turn * 2, 'user', `a prompt of a few words, number ${turn}`, id, 0]);
    rows.push([sid, turn * 2 + 1, 'assistant', `a reply of a few more words than the prompt it answers, number ${turn}`, id, 0]);
  }
  return { session: [sid, 'sk', 'active', 1, '', 0, 0], turns, messages: rows };
}

const SESSION_COLUMNS = ['sid', 'session_key', 'status', 'history_version', 'overrides', 'created_at', 'updated_at'];
const TURN_COLUMNS = ['turn_id', 'sid', 'status', 'started_at', 'ended_at'];
const MESSAGE_COLUMNS = ['sid', 'seq', 'role', 'content', 'turn_id', 'created_at'];

/** Writes sessions straight into a store's schema, a table at a time. */
interface Seeder {
  seed(sid: string, messages: number): Promise<void>;
  /** The floor of a delete: a plain DELETE of the session's rows. */
  plainDelete(sid: string, messages: number): Promise<void>;
  close(): Promise<void>;
}

function sqliteSeeder(file: string): Seeder {
  const db = new Database(file);
  const insert = (table: string, columns: string[]) => db.prepare(`INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`);
  const [sessions, turns, messages] = [insert('sessions', SESSION_COLUMNS), insert('turns', TURN_COLUMNS), insert('messages', MESSAGE_COLUMNS)];
  const deleteTurn = db.prepare('DELETE FROM turns WHERE turn_id = ?');
  return {
    seed: async (sid, n) => {
      const rows = sessionRows(sid, n);
      db.transaction(() => {
        sessions.run(...rows.session);
        for (const turn of rows.turns) turns.run(...turn);
        for (const message of rows.messages) messages.run(...message);
      })();
    },
    plainDelete: async (sid, n) => {
      db.transaction(() => {
        db.prepare('DELETE FROM messages WHERE sid = ?').run(sid);
        for (let turn = 0; turn < n / 2; turn++) deleteTurn.run(`${sid}-t${turn}`);
        db.prepare('DELETE FROM sessions WHERE sid = ?').run(sid);
      })();
    },
    close: async () => void db.close(),
  };
}

async function postgresSeeder(url: string): Promise<Seeder> {
  const client = new pg.Client({ connectionString: url, options: '-c search_path=turnhost' });
  await client.connect();
  return {
    seed: async (sid, n) => {
      const rows = sessionRows(sid, n);
      await client.query('BEGIN');
      await bulkInsert(client, 'sessions', SESSION_COLUMNS, [rows.session], await columnTypes(client, 'sessions'));
      await bulkInsert(client, 'turns', TURN_COLUMNS, rows.turns, await columnTypes(client, 'turns'));
      await bulkInsert(client, 'messages', MESSAGE_COLUMNS, rows.messages, await columnTypes(client, 'messages'));
      await client.query('COMMIT');
    },
    plainDelete: async (sid, n) => {
      await client.query('BEGIN');
      await client.query('DELETE FROM messages WHERE sid = $1', [sid]);
      await client.query('DELETE FROM turns WHERE turn_id = ANY($1)', [Array.from({ length: n / 2 }, (_, turn) => `${sid}-t${turn}`)]);
      await client.query('DELETE FROM sessions WHERE sid = $1', [sid]);
      await client.query('COMMIT');
    },
    close: () => client.end(),
  };
}

interface DeleteTimings {
  floorMs: number;
  deleteMs: number;
  withForksMs: number;
  /** After the commit, off the turns' path: the session's turns no row shows, and the tombstone marked. */
  finishMs: number;
}

/** One round: a plain delete, the host's delete of an identical session, and of a source with forks. */
async function deleteRound(store: Store, side: SideStore, seeder: Seeder, round: number): Promise<DeleteTimings> {
  const [plain, deleted, source] = ['plain', 'deleted', 'source'].map((name) => `${name}-${round}`) as [string, string, string];
  for (const sid of [plain, deleted, source]) await seeder.seed(sid, DELETED_MESSAGES);
  for (let i = 0; i < FORKS; i++) await side.fork({ sid: `${source}-fork-${i}`, sessionKey: 'sk', cwd: null, source, atTurnId: null, agent: null });
  const timed = async (work: () => Promise<void>) => {
    const t0 = performance.now();
    await work();
    return performance.now() - t0;
  };
  const floorMs = await timed(() => seeder.plainDelete(plain, DELETED_MESSAGES));
  const deleteMs = await timed(() => store.commitNow((w) => w.deleteSession(deleted, 'bench')));
  const finishMs = await timed(() => store.finishDelete(deleted));
  const withForksMs = await timed(() => store.commitNow((w) => w.deleteSession(source, 'bench')));
  // The forks keep the source's line: all of it, through the source's hidden row.
  const forkHistory = await store.messages(`${source}-fork-0`);
  if (forkHistory.length !== DELETED_MESSAGES) throw new Error(`a fork reads ${forkHistory.length} messages after its source's delete`);
  return { floorMs, deleteMs, withForksMs, finishMs };
}

async function deletes(server: TestPostgres): Promise<Record<'sqlite' | 'postgres', DeleteTimings[]>> {
  const results: Record<'sqlite' | 'postgres', DeleteTimings[]> = { sqlite: [], postgres: [] };
  for (let n = 0; n < ROUNDS; n++) {
    await withTempDir(async (dir) => {
      const file = join(dir, 'turnhost.db');
      const side = openSqliteSide(file);
      const store = SqliteStore.open(file);
      const seeder = sqliteSeeder(file);
      try {
        results.sqlite.push(await deleteRound(store, side, seeder, n));
      } finally {
        await seeder.close();
        await store.close();
        await side.close();
      }
    });
    const location = storeLocation(await server.database(), '') as PgLocation;
    const side = await openPostgresSide(location);
    const store = await openStore(location);
    const seeder = await postgresSeeder(location.url);
    try {
      results.postgres.push(await deleteRound(store, side, seeder, n));
    } finally {
      await seeder.close();
      await store.close();
      await side.close();
    }
  }
  return results;
}

/** A session file of `messages` messages, as export writes it. */
function exportText(messages: number): string {
  const lines: ExportLine[] = [
    {
      format: 'turnhost-session/1',
      session: { session_id: 'src', status: 'finalized', end_reason: null, created_at: new Date(0).toISOString(), updated_at: new Date(0).toISOString(), agent: null, overrides: '', forked_from: null, exported_at: new Date().toISOString() },
    },
  ];
  for (let turn = 0; turn < messages / 2; turn++) {
    const turnId = `t-${turn}`;
    const at = new Date(turn * 1000).toISOString();
    lines.push({ turn: { turn_id: turnId, status: 'completed', by: null, started_at: at, ended_at: at, error: null, model: 'm', usage: { prompt_tokens: 10, completion_tokens: 5, cached_tokens: null, reasoning_tokens: null, calls: 1 }, superseded_at: null, superseded_by: null } });
    lines.push({ message: { seq: turn * 2, role: 'user', content: `a prompt of a few words, number ${turn}`, turn_id: turnId, at } });
    lines.push({ message: { seq: turn * 2 + 1, role: 'assistant', content: `a reply of a few more words than the prompt it answers, number ${turn}`, turn_id: turnId, at } });
  }
  return lines.map((line) => JSON.stringify(line)).join('\n');
}

interface ImportTimings {
  floorMs: number;
  importMs: number;
}

/** The floor: the import's own rows, inserted plainly (no file to read and check, no lookups). */
async function importRound(text: string, side: SideStore, plainInsert: (rows: ReturnType<typeof importRows>) => Promise<void>, round: number): Promise<ImportTimings> {
  const rows = importRows(parseExport(text), `plain-${round}`, 'sk', Date.now(), false);
  const t0 = performance.now();
  await plainInsert(rows);
  const floorMs = performance.now() - t0;
  const t1 = performance.now();
  const made = await side.importSession(parseExport(text), { sid: `imported-${round}`, sessionKey: 'sk', owner: null });
  const importMs = performance.now() - t1;
  if (made.messages !== IMPORTED_MESSAGES) throw new Error(`imported ${made.messages} messages`);
  return { floorMs, importMs };
}

async function imports(server: TestPostgres): Promise<Record<'sqlite' | 'postgres', ImportTimings[]>> {
  const text = exportText(IMPORTED_MESSAGES);
  const results: Record<'sqlite' | 'postgres', ImportTimings[]> = { sqlite: [], postgres: [] };
  for (let n = 0; n < ROUNDS; n++) {
    await withTempDir(async (dir) => {
      const file = join(dir, 'turnhost.db');
      const side = openSqliteSide(file);
      const db = new Database(file);
      const plain = async (rows: ReturnType<typeof importRows>) => {
        db.transaction(() => {
          for (const table of ['sessions', 'turns', 'messages'] as const) {
            const columns = IMPORT_COLUMNS[table];
            const insert = db.prepare(`INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`);
            for (const row of rows[table]) insert.run(...row);
          }
        })();
      };
      try {
        // The floor's turn ids are the file's: the import that follows gives its own new ones.
        results.sqlite.push(await importRound(text, side, plain, n));
      } finally {
        db.close();
        await side.close();
      }
    });
    const location = storeLocation(await server.database(), '') as PgLocation;
    const side = await openPostgresSide(location);
    const client = new pg.Client({ connectionString: location.url, options: '-c search_path=turnhost' });
    await client.connect();
    const plain = async (rows: ReturnType<typeof importRows>) => {
      await client.query('BEGIN');
      for (const table of ['sessions', 'turns', 'messages'] as const) await bulkInsert(client, table, IMPORT_COLUMNS[table], rows[table], await columnTypes(client, table));
      await client.query('COMMIT');
    };
    try {
      results.postgres.push(await importRound(text, side, plain, n));
    } finally {
      await client.end();
      await side.close();
    }
  }
  return results;
}

/** A SQLite home whose store holds `messages` messages over COPIED_SESSIONS sessions. */
async function seedHome(home: string, messages: number): Promise<void> {
  const file = join(home, 'turnhost.db');
  await openSqliteSide(file).close(); // the schema
  const seeder = sqliteSeeder(file);
  for (let s = 0; s < COPIED_SESSIONS; s++) await seeder.seed(`s-${s}`, messages / COPIED_SESSIONS);
  await seeder.close();
}

/** The real command, its wall time and its peak memory (VmHWM read just before it ends: a poll of /proc). */
async function timedCopy(home: string, url: string): Promise<{ ms: number; peakMib: number }> {
  const t0 = performance.now();
  const child = spawn(process.execPath, [CLI, 'store', 'copy', '--to', url, '--home', home], { stdio: ['ignore', 'pipe', 'pipe'] });
  let peakKib = 0;
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const sample = () => {
    try {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      peakKib = Math.max(peakKib, Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0));
    } catch {
      // ended between two samples: the last one stands
    }
  };
  const poll = setInterval(sample, 100);
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  clearInterval(poll);
  if (code !== 0) throw new Error(`store copy exited ${code}: ${stderr.slice(-2000)}`);
  return { ms: performance.now() - t0, peakMib: peakKib / 1024 };
}

/** The floor: the same messages read from SQLite a batch at a time and inserted into PostgreSQL, nothing else. */
async function plainCopy(home: string, url: string): Promise<number> {
  await (await openPostgresSide(storeLocation(url, '') as PgLocation)).close(); // the schema
  const db = new Database(join(home, 'turnhost.db'), { readonly: true });
  const client = new pg.Client({ connectionString: url, options: '-c search_path=turnhost' });
  await client.connect();
  const t0 = performance.now();
  try {
    await client.query('CREATE TABLE plain_messages (LIKE messages INCLUDING ALL)');
    const types = await columnTypes(client, 'plain_messages');
    const read = db.prepare(`SELECT ${MESSAGE_COLUMNS.join(', ')} FROM messages WHERE (sid, seq) > (?, ?) ORDER BY sid, seq LIMIT 2000`).raw();
    let after: unknown[] = ['', -1];
    for (;;) {
      const rows = read.all(...after) as unknown[][];
      if (rows.length === 0) break;
      await bulkInsert(client, 'plain_messages', MESSAGE_COLUMNS, rows, types);
      const last = rows.at(-1)!;
      after = [last[0], last[1]];
    }
    return performance.now() - t0;
  } finally {
    await client.end();
    db.close();
  }
}

interface CopyTimings {
  floorMs: number;
  copyMs: number;
  peakMib: number;
  smallPeakMib: number;
}

async function copies(server: TestPostgres): Promise<CopyTimings> {
  return withTempDir(async (dir) => {
    const small = join(dir, 'small');
    const large = join(dir, 'large');
    const { mkdirSync } = await import('node:fs');
    for (const [home, messages] of [[small, SMALL_COPY_MESSAGES], [large, COPIED_MESSAGES]] as const) {
      mkdirSync(home, { mode: 0o700 });
      process.stdout.write(`seeding ${messages.toLocaleString('en')} messages…\n`);
      await seedHome(home, messages);
    }
    const smallCopy = await timedCopy(small, await server.database());
    const floorMs = await plainCopy(large, await server.database());
    const copy = await timedCopy(large, await server.database());
    return { floorMs, copyMs: copy.ms, peakMib: copy.peakMib, smallPeakMib: smallCopy.peakMib };
  });
}

export async function benchLife(): Promise<void> {
  const server = await TestPostgres.start();
  let deleted: Awaited<ReturnType<typeof deletes>>;
  let imported: Awaited<ReturnType<typeof imports>>;
  let copied: CopyTimings;
  try {
    process.stdout.write('deletes…\n');
    deleted = await deletes(server);
    process.stdout.write('imports…\n');
    imported = await imports(server);
    process.stdout.write('store copy…\n');
    copied = await copies(server);
  } finally {
    await server.stop();
  }
  const stores = ['sqlite', 'postgres'] as const;
  const name = (store: (typeof stores)[number]) => (store === 'sqlite' ? 'SQLite' : 'PostgreSQL');
  const m = (values: number[]) => round(median(values), 1);
  printTable(
    `a delete, ms (median of ${ROUNDS} rounds; the floor: a plain DELETE of an identical session's messages, turns and row)`,
    ['store', `floor: plain DELETE of ${DELETED_MESSAGES.toLocaleString('en')} messages`, 'delete (one commit)', `delete of a source with ${FORKS} forks`, 'after the commit: its last turns, the tombstone'],
    stores.map((store) => [name(store), m(deleted[store].map((t) => t.floorMs)), m(deleted[store].map((t) => t.deleteMs)), m(deleted[store].map((t) => t.withForksMs)), m(deleted[store].map((t) => t.finishMs))]),
  );
  printTable(
    `an import of ${IMPORTED_MESSAGES.toLocaleString('en')} messages, ms (median of ${ROUNDS}; the floor: a plain bulk insert of the same rows)`,
    ['store', 'floor: plain bulk insert', 'import (read, checked, one transaction)'],
    stores.map((store) => [name(store), m(imported[store].map((t) => t.floorMs)), m(imported[store].map((t) => t.importMs))]),
  );
  printTable(
    `store copy, SQLite to PostgreSQL (one run; the floor: the same messages read in batches and inserted, nothing else)`,
    ['measure', 'value'],
    [
      [`floor: plain copy of ${COPIED_MESSAGES.toLocaleString('en')} messages, s`, round(copied.floorMs / 1000, 1)],
      [`turnhost store copy of ${COPIED_MESSAGES.toLocaleString('en')} messages (every table, then counts and digests), s`, round(copied.copyMs / 1000, 1)],
      [`peak memory, copy of ${SMALL_COPY_MESSAGES.toLocaleString('en')} messages, MiB`, round(copied.smallPeakMib)],
      [`peak memory, copy of ${COPIED_MESSAGES.toLocaleString('en')} messages, MiB`, round(copied.peakMib)],
    ],
  );
  const worstDelete = Math.max(m(deleted.sqlite.map((t) => t.deleteMs)));
  const worstForks = m(deleted.sqlite.map((t) => t.withForksMs));
  const worstImport = Math.max(...stores.map((store) => m(imported[store].map((t) => t.importMs))));
  // Flat: ten times the messages, at most a fifth more memory.
  const flat = copied.peakMib <= copied.smallPeakMib * 1.2;
  const targets = [
    [`delete of ${DELETED_MESSAGES.toLocaleString('en')} messages, SQLite, median ms`, worstDelete, `<= ${TARGETS.deleteMs}`, verdict(worstDelete <= TARGETS.deleteMs)],
    [`delete of a source with ${FORKS} forks, SQLite, median ms`, worstForks, `<= ${TARGETS.deleteWithForksMs}`, verdict(worstForks <= TARGETS.deleteWithForksMs)],
    [`import of ${IMPORTED_MESSAGES.toLocaleString('en')} messages, median ms (the slower store)`, worstImport, `<= ${TARGETS.importMs}`, verdict(worstImport <= TARGETS.importMs)],
    [`store copy of ${COPIED_MESSAGES.toLocaleString('en')} messages, SQLite to PostgreSQL, s`, round(copied.copyMs / 1000, 1), `<= ${TARGETS.copyMs / 1000}`, verdict(copied.copyMs <= TARGETS.copyMs)],
    ['store copy memory, 10x the messages, peak MiB', `${round(copied.smallPeakMib)} → ${round(copied.peakMib)}`, 'flat (<= 1.2x)', verdict(flat)],
  ];
  printTable('targets', ['measure', 'value', 'target', 'verdict'], targets);
  const file = writeResult('life', { deleted, imported, copied, targets: targets.map(([measure, value, target, met]) => ({ measure, value, target, met })) });
  process.stdout.write(`wrote ${file}\n`);
}
