// The group-commit floor on PostgreSQL: the same rows and frames as the SQLite floors
// (floor-common.mjs), one transaction per batch of frames, its statements pipelined on one
// connection, as a minimal program would write them with either driver: `pg` (node-postgres, its
// pipeline mode) or `postgres` (porsager's, which pipelines the queries of a `sql.begin`). Batches
// arriving while one commits wait for it and go together in the next.
import pg from 'pg';
import postgres from 'postgres';
import { migrate } from '../../dist/persistence/postgres/schema.js';
import { endLines, helloLine, readLines, startedLine, writeOut } from './floor-common.mjs';

const [url, driver = 'pg'] = process.argv.slice(2);
const client = new pg.Client({ connectionString: url, options: '-c search_path=turnhost', pipeline: true });
await client.connect();
await migrate(client);
const sql = driver === 'postgres' ? postgres(url, { max: 1, connection: { search_path: 'turnhost' }, onnotice: () => {} }) : null;

const UPSERT = `
  INSERT INTO sessions (sid, session_key, status, history_version, overrides, cwd, boot_id, created_at, updated_at)
  VALUES ($1, $1, 'active', $2, '', NULL, 'floor', $3, $3)
  ON CONFLICT (sid) DO UPDATE SET history_version = EXCLUDED.history_version, updated_at = EXCLUDED.updated_at`;
const INSERT_MESSAGE = 'INSERT INTO messages (sid, seq, role, content, turn_id, created_at) VALUES ($1, $2, $3, $4, $5, $6)';
const INSERT_TURN = "INSERT INTO turns (turn_id, sid, request_id, status, boot_id, started_at) VALUES ($1, $2, $3, 'running', 'floor', $4)";
const END_TURN = "UPDATE turns SET status = 'completed', ended_at = $1 WHERE turn_id = $2";

const sessions = new Map();
let turnCounter = 0;

function transaction(statements) {
  if (sql !== null) return sql.begin((tx) => statements.map(([text, values]) => tx.unsafe(text, values, { prepare: true })));
  return Promise.all([client.query('BEGIN'), ...statements.map(([text, values]) => client.query(text, values)), client.query('COMMIT')]);
}

async function runBatch(frames) {
  const now = Date.now();
  const turns = frames.map((frame) => {
    const s = sessions.get(frame.sid) ?? { count: 0, version: 0 };
    sessions.set(frame.sid, s);
    return { frame, s, turnId: `turn-${++turnCounter}`, startedNs: process.hrtime.bigint() };
  });
  await transaction(
    turns.flatMap((t) => {
      t.s.version++;
      const rows = [[UPSERT, [t.frame.sid, t.s.version, now]], [INSERT_MESSAGE, [t.frame.sid, t.s.count, 'user', t.frame.text, t.turnId, now]], [INSERT_TURN, [t.turnId, t.frame.sid, t.frame.request_id, now]]];
      t.s.count++;
      return rows;
    }),
  );
  writeOut(turns.map(startedLine).join(''));
  await transaction(
    turns.flatMap((t) => {
      t.s.version++;
      const rows = [[INSERT_MESSAGE, [t.frame.sid, t.s.count, 'assistant', t.frame.text, t.turnId, now]], [END_TURN, [now, t.turnId]], [UPSERT, [t.frame.sid, t.s.version, now]]];
      t.s.count++;
      return rows;
    }),
  );
  writeOut(turns.map(endLines).join(''));
}

let waiting = [];
let running = null;
function pump() {
  if (running !== null || waiting.length === 0) return;
  const batch = waiting;
  waiting = [];
  running = runBatch(batch).then(() => {
    running = null;
    pump();
  });
}

writeOut(helloLine());
readLines((lines) => {
  waiting.push(...lines.map((line) => JSON.parse(line)));
  pump();
});
