// Shared by the two floor programs: the same schema, rows and frames as turnhost, with none of
// its machinery (no actors, no agent, no validation beyond what a turn needs), and SQLite's
// default checkpointing (inline, every 1000 WAL pages), as a minimal program would have.
import { writeSync } from 'node:fs';
import Database from 'better-sqlite3';
import { migrate } from '../../dist/persistence/sqlite/schema.js';

export function openDatabase(file) {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  migrate(db);
  const upsert = db.prepare(`
    INSERT INTO sessions (sid, session_key, status, history_version, overrides, cwd, boot_id, created_at, updated_at)
    VALUES (?, ?, 'active', ?, '', NULL, 'floor', ?, ?)
    ON CONFLICT (sid) DO UPDATE SET history_version = excluded.history_version, updated_at = excluded.updated_at`);
  const insertMessage = db.prepare('INSERT INTO messages (sid, seq, role, content, turn_id, created_at) VALUES (?, ?, ?, ?, ?, ?)');
  const insertTurn = db.prepare("INSERT INTO turns (turn_id, sid, request_id, status, boot_id, started_at) VALUES (?, ?, ?, 'running', 'floor', ?)");
  const endTurn = db.prepare("UPDATE turns SET status = 'completed', ended_at = ? WHERE turn_id = ?");
  const sessions = new Map();
  let turnCounter = 0;
  return {
    db,
    /** The first commit's rows: the prompt and a running turn. */
    begin(frame) {
      const now = Date.now();
      const s = sessions.get(frame.sid) ?? { count: 0, version: 0 };
      sessions.set(frame.sid, s);
      const turn = { frame, turnId: `turn-${++turnCounter}`, s, startedNs: process.hrtime.bigint() };
      s.version++;
      upsert.run(frame.sid, frame.sid, s.version, now, now);
      insertMessage.run(frame.sid, s.count, 'user', frame.text, turn.turnId, now);
      insertTurn.run(turn.turnId, frame.sid, frame.request_id, now);
      s.count++;
      return turn;
    },
    /** The second commit's rows: the reply and the completed turn. */
    end(turn) {
      const now = Date.now();
      const { s, frame } = turn;
      s.version++;
      insertMessage.run(frame.sid, s.count, 'assistant', frame.text, turn.turnId, now);
      endTurn.run(now, turn.turnId);
      s.count++;
      upsert.run(frame.sid, frame.sid, s.version, now, now);
    },
  };
}

const ns = () => process.hrtime.bigint();

export function helloLine() {
  return `{"type":"hello","host_pid":${process.pid},"protocol":1,"host_ns":${ns()}}\n`;
}

export function startedLine(turn) {
  const { frame } = turn;
  return `${JSON.stringify({ type: 'turn.started', sid: frame.sid, request_id: frame.request_id, turn_id: turn.turnId }).slice(0, -1)},"started_ns":${turn.startedNs},"host_ns":${ns()}}\n`;
}

/** The deltas, message.complete and turn.end of an echo turn. */
export function endLines(turn) {
  const { frame, s } = turn;
  let out = '';
  const event = (type, payload) =>
    `${JSON.stringify({ type: 'rpc', sid: frame.sid, message: { jsonrpc: '2.0', method: 'event', params: { type, session_id: frame.sid, payload } } }).slice(0, -1)},"host_ns":${ns()}}\n`;
  for (const word of frame.text.match(/\s*\S+/g) ?? []) out += event('message.delta', { text: word });
  out += event('message.complete', { text: frame.text });
  const end = {
    type: 'turn.end', sid: frame.sid, request_id: frame.request_id, turn_id: turn.turnId, session_key: frame.sid,
    history_version: s.version, message_count: s.count, interrupted: false,
    session_info: { agent: 'floor', model: null, personality: null, system_prompt: null, cwd: null, turns: s.count / 2 },
    session_info_emitted: true,
  };
  out += `${JSON.stringify(end).slice(0, -1)},"ended_ns":${ns()},"host_ns":${ns()}}\n`;
  return out;
}

export function writeOut(text) {
  let bytes = Buffer.from(text);
  while (bytes.length > 0) bytes = bytes.subarray(writeSync(1, bytes));
}

/** Calls onLines with the complete lines of each stdin chunk. */
export function readLines(onLines) {
  let rest = '';
  process.stdin.on('data', (chunk) => {
    const text = rest + chunk.toString('utf8');
    const lines = text.split('\n');
    rest = lines.pop();
    onLines(lines.filter((l) => l !== ''));
  });
  process.stdin.on('end', () => process.exit(0));
}
