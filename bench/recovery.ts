// `npm run bench -- recovery`: a host start after a crash, with 10,000 sessions (200,000 messages)
// left active by the dead host: spawn → hello, next to a start on an empty home in the same run.
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { migrate } from '../persistence/sqlite/schema.js';
import { CLI, median, printTable, round, verdict, withTempDir, writeResult } from './common.js';

const SESSIONS = 10_000;
const MESSAGES_PER_SESSION = 20;
const RUNS = 5;

/** A database as a host that died would leave it: its boot open, its sessions active, one turn running each. */
function crashedDatabase(file: string): void {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  migrate(db);
  const now = Date.now();
  const session = db.prepare("INSERT INTO sessions (sid, session_key, status, history_version, overrides, boot_id, created_at, updated_at) VALUES (?, ?, 'active', ?, '', 'dead', ?, ?)");
  const message = db.prepare('INSERT INTO messages (sid, seq, role, content, turn_id, created_at) VALUES (?, ?, ?, ?, ?, ?)');
  const turn = db.prepare("INSERT INTO turns (turn_id, sid, request_id, status, boot_id, started_at) VALUES (?, ?, ?, 'running', 'dead', ?)");
  db.transaction(() => {
    db.prepare("INSERT INTO boots (boot_id, pid, started_at) VALUES ('dead', 1, ?)").run(now);
    for (let s = 0; s < SESSIONS; s++) {
      const sid = `session-${s}`;
      session.run(sid, sid, MESSAGES_PER_SESSION, now, now);
      for (let m = 0; m < MESSAGES_PER_SESSION; m++) message.run(sid, m, m % 2 ? 'assistant' : 'user', `message ${m} of ${sid}: some ordinary text of a turn`, `t-${s}-${m >> 1}`, now);
      turn.run(`t-${s}-running`, sid, `r-${s}`, now);
    }
  })();
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
}

/** Spawns a host on the home and resolves with the time until its hello, and how many sessions it recovered. */
function timeToHello(home: string): Promise<{ ms: number; recovered: number }> {
  const started = performance.now();
  const child = spawn(process.execPath, [CLI, 'host', '--home', home], { stdio: ['pipe', 'pipe', 'inherit'], env: { ...process.env, TURNHOST_LOG_LEVEL: 'error' } });
  let buffer = '';
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('utf8');
      const newline = buffer.indexOf('\n');
      if (newline === -1) return;
      const ms = performance.now() - started;
      const hello = JSON.parse(buffer.slice(0, newline)) as { type: string; recovered: unknown[] };
      child.stdin!.end();
      child.once('close', () => (hello.type === 'hello' ? resolve({ ms, recovered: hello.recovered.length }) : reject(new Error(`first frame: ${hello.type}`))));
    });
    child.once('error', reject);
  });
}


export async function benchRecovery(): Promise<void> {
  const result = await withTempDir(async (dir) => {
    const template = join(dir, 'crashed.db');
    process.stdout.write(`building a crashed database: ${SESSIONS} sessions, ${SESSIONS * MESSAGES_PER_SESSION} messages…\n`);
    crashedDatabase(template);
    const empty: number[] = [];
    const crashed: number[] = [];
    let recovered = 0;
    for (let run = 0; run < RUNS; run++) {
      const emptyHome = join(dir, `empty-${run}`);
      mkdirSync(emptyHome);
      empty.push((await timeToHello(emptyHome)).ms);
      const home = join(dir, `crashed-${run}`);
      mkdirSync(home);
      copyFileSync(template, join(home, 'turnhost.db'));
      const outcome = await timeToHello(home);
      crashed.push(outcome.ms);
      recovered = outcome.recovered;
    }
    return { empty, crashed, recovered };
  });
  const helloMs = median(result.crashed);
  printTable(
    `host start to hello (median of ${RUNS} runs; spawn of node included)`,
    ['home', 'hello ms', 'runs ms', 'recovered'],
    [
      ['empty', round(median(result.empty), 1), result.empty.map((v) => round(v)).join(' '), 0],
      [`${SESSIONS} sessions, ${SESSIONS * MESSAGES_PER_SESSION} messages, after a crash`, round(helloMs, 1), result.crashed.map((v) => round(v)).join(' '), result.recovered],
    ],
  );
  const targets = {
    helloMs: { value: round(helloMs, 1), target: '<= 300', met: helloMs <= 300 && result.recovered === SESSIONS },
  };
  printTable('targets', ['measure', 'value', 'target', 'verdict'], Object.entries(targets).map(([k, t]) => [k, t.value, t.target, verdict(t.met)]));
  const file = writeResult('recovery', { sessions: SESSIONS, messages: SESSIONS * MESSAGES_PER_SESSION, runs: RUNS, ...result, helloMedianMs: helloMs, targets });
  process.stdout.write(`\nwrote ${file}\n`);
}
