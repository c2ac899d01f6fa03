// `npm run bench -- branches`: a fork (PROTOCOL.md §2.2) costs one statement whatever the source's
// length. On SQLite and on PostgreSQL (a server this bench starts), a session of 10,000 messages
// and one of 10 are forked at their last turn, many times, through the store's own fork (the
// daemon's side connection), and the long one at its first turn too (a fork reads the line back
// from its end to its turn); the floor is a plain insert of a session row on the same connection,
// in the same rounds. Target: a fork of the 10,000-message session within 50 ms (median).
import Database from 'better-sqlite3';
import { join } from 'node:path';
import pg from 'pg';
import { openPostgresSide } from '../persistence/postgres/postgres-side.js';
import type { SideStore } from '../persistence/side-store.js';
import { openSqliteSide } from '../persistence/sqlite/sqlite-side.js';
import { storeLocation } from '../persistence/store-location.js';
import { TestPostgres } from '../test/helpers/postgres.js';
import { median, printTable, round, ROUNDS, verdict, withTempDir, writeResult } from './common.js';

const SIZES = [10, 10_000];
const FORKS_PER_ROUND = 20;
const TARGET_MS = 50;

/** A session of `messages` messages, two a turn, each turn ended: written straight into the schema. */
function seedSql(sid: string, messages: number): string[] {
  const statements = [`INSERT INTO sessions (sid, session_key, status, history_version, overrides, created_at, updated_at) VALUES ('${sid}', 'sk', 'active', 1, '', 0, 0)`];
  for (let turn = 0; turn < messages / 2; turn++) {
    const id = `${sid}-t${turn}`;
    statements.push(`INSERT INTO turns (turn_id, sid, status, started_at, ended_at) VALUES ('${id}', '${sid}', 'completed', 0, 1)`);
    statements.push(`INSERT INTO messages (sid, seq, role, content, turn_id, created_at) VALUES ('${sid}', ${turn * 2}, 'user', 'a prompt of a few words', '${id}', 0), ('${sid}', ${turn * 2 + 1}, 'assistant', 'a reply of a few more words than the prompt', '${id}', 0)`);
  }
  return statements;
}

interface Timings {
  forkMs: Record<number, number[]>;
  /** A fork of the longest source at its first turn: the farthest a fork's look goes back. */
  firstTurnMs: number[];
  floorMs: number[];
}

/** Times each fork of each source, and the floor, on one side store. */
async function measure(side: SideStore, plainInsert: (sid: string) => Promise<void>, round: number): Promise<Timings> {
  const timings: Timings = { forkMs: Object.fromEntries(SIZES.map((n) => [n, []])), firstTurnMs: [], floorMs: [] };
  const longest = SIZES.at(-1)!;
  for (let i = 0; i < FORKS_PER_ROUND; i++) {
    for (const size of SIZES) {
      const t0 = performance.now();
      const made = await side.fork({ sid: `f-${size}-${round}-${i}`, sessionKey: 'sk', cwd: null, source: `src-${size}`, atTurnId: null, agent: null });
      timings.forkMs[size]!.push(performance.now() - t0);
      if (made?.upto !== size) throw new Error(`the fork of src-${size} took ${made?.upto} messages`);
    }
    const t1 = performance.now();
    const first = await side.fork({ sid: `first-${round}-${i}`, sessionKey: 'sk', cwd: null, source: `src-${longest}`, atTurnId: `src-${longest}-t0`, agent: null });
    timings.firstTurnMs.push(performance.now() - t1);
    if (first?.upto !== 2) throw new Error(`the fork at the first turn took ${first?.upto} messages`);
    const t0 = performance.now();
    await plainInsert(`plain-${round}-${i}`);
    timings.floorMs.push(performance.now() - t0);
  }
  return timings;
}

async function sqliteRound(round: number): Promise<Timings> {
  return withTempDir(async (dir) => {
    const file = join(dir, 'turnhost.db');
    const side = openSqliteSide(file); // makes the schema
    const db = new Database(file);
    db.transaction(() => {
      for (const size of SIZES) for (const sql of seedSql(`src-${size}`, size)) db.exec(sql);
    })();
    const insert = db.prepare("INSERT INTO sessions (sid, session_key, status, history_version, overrides, created_at, updated_at) VALUES (?, 'sk', 'active', 0, '', 0, 0)");
    try {
      return await measure(side, async (sid) => void insert.run(sid), round);
    } finally {
      db.close();
      await side.close();
    }
  });
}

async function postgresRound(server: TestPostgres, round: number): Promise<Timings> {
  const url = await server.database();
  const side = await openPostgresSide(storeLocation(url, '') as Extract<ReturnType<typeof storeLocation>, { kind: 'postgres' }>);
  const client = new pg.Client({ connectionString: url, options: '-c search_path=turnhost' });
  await client.connect();
  try {
    await client.query('BEGIN');
    for (const size of SIZES) for (const sql of seedSql(`src-${size}`, size)) await client.query(sql);
    await client.query('COMMIT');
    return await measure(side, async (sid) => void (await client.query("INSERT INTO sessions (sid, session_key, status, history_version, overrides, created_at, updated_at) VALUES ($1, 'sk', 'active', 0, '', 0, 0)", [sid])), round);
  } finally {
    await client.end();
    await side.close();
  }
}

export async function benchBranches(): Promise<void> {
  const server = await TestPostgres.start();
  const results: Record<'sqlite' | 'postgres', Timings[]> = { sqlite: [], postgres: [] };
  try {
    for (let n = 0; n < ROUNDS; n++) {
      process.stdout.write(`round ${n + 1} of ${ROUNDS}…\n`);
      results.sqlite.push(await sqliteRound(n));
      results.postgres.push(await postgresRound(server, n));
    }
  } finally {
    await server.stop();
  }
  const rows = (['sqlite', 'postgres'] as const).map((store) => {
    const all = results[store];
    return [
      store === 'sqlite' ? 'SQLite' : 'PostgreSQL',
      round(median(all.flatMap((t) => t.floorMs)), 3),
      ...SIZES.map((size) => round(median(all.flatMap((t) => t.forkMs[size]!)), 3)),
      round(median(all.flatMap((t) => t.firstTurnMs)), 3),
    ];
  });
  printTable(
    `a fork at the last turn, ms (median of ${ROUNDS} rounds of ${FORKS_PER_ROUND}; the floor: a plain insert of a session row on the same connection)`,
    ['store', 'floor: a session row', ...SIZES.map((n) => `fork of ${n.toLocaleString('en')} messages`), `of ${SIZES.at(-1)!.toLocaleString('en')}, at its first turn`],
    rows,
  );
  const worst = Math.max(...rows.map((row) => Number(row.at(-2))));
  printTable('targets', ['measure', 'value', 'target', 'verdict'], [[`a fork of ${SIZES.at(-1)!.toLocaleString('en')} messages, median ms (the slower store)`, worst, `<= ${TARGET_MS}`, verdict(worst <= TARGET_MS)]]);
  const file = writeResult('branches', { sizes: SIZES, results, target: { forkMs: worst, met: worst <= TARGET_MS } });
  process.stdout.write(`wrote ${file}\n`);
}
