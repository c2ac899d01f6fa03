// `npm run bench -- shutdown`: the coordinated shutdown at 10,000 sessions, and the raw SQL
// flush as the floor, measured in the same run.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { LineReader } from '../protocol/line-reader.js';
import type { ShutdownReport } from '../protocol/outbound.js';
import { CLI, ROOT, printTable, round, verdict, withTempDir, writeResult } from './common.js';

const IDLE_SESSIONS = 10_000;
const SEEDED_HISTORY = 18; // + the setup turn's two messages = 20
const STREAMING_SESSIONS = 10;
const STREAM_EVERY_MS = 10; // ~100 messages in a 1 s drain
const STREAMING_AGENT = join(ROOT, 'test/fixtures/streaming-agent.mjs');

type Frame = Record<string, unknown> & { type: string };

/** The host with a frame listener; resolves waits by type and count. */
class Host {
  readonly child: ChildProcess;
  private listeners: ((f: Frame) => void)[] = [];
  readonly exited: Promise<number | null>;

  constructor(home: string) {
    this.child = spawn(process.execPath, [CLI, 'host', '--home', home, '--agent', STREAMING_AGENT, '--workers', '64'], {
      stdio: ['pipe', 'pipe', 'inherit'],
      env: { ...process.env, TURNHOST_LOG_LEVEL: 'warn' },
    });
    const reader = new LineReader({
      line: (text) => {
        const frame = JSON.parse(text) as Frame;
        for (const l of this.listeners) l(frame);
      },
      oversized: () => {},
    });
    this.child.stdout!.on('data', (c: Buffer) => reader.push(c));
    this.exited = new Promise((resolve) => this.child.once('exit', (code) => resolve(code)));
  }

  send(frames: object[]): void {
    this.child.stdin!.write(frames.map((f) => JSON.stringify(f)).join('\n') + '\n');
  }

  /** Resolves when `count` frames matching have arrived from now on. */
  expect(count: number, match: (f: Frame) => boolean): Promise<Frame[]> {
    const seen: Frame[] = [];
    return new Promise((resolve, reject) => {
      const listener = (f: Frame) => {
        if (f.type === 'turn.error') reject(new Error(`turn failed: ${JSON.stringify(f)}`));
        if (!match(f)) return;
        seen.push(f);
        if (seen.length === count) {
          this.listeners = this.listeners.filter((l) => l !== listener);
          resolve(seen);
        }
      };
      this.listeners.push(listener);
    });
  }
}

async function seedIdleSessions(host: Host): Promise<void> {
  const history = Array.from({ length: SEEDED_HISTORY }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `earlier message ${i}` }));
  const ended = host.expect(IDLE_SESSIONS, (f) => f.type === 'turn.end');
  host.send(Array.from({ length: IDLE_SESSIONS }, (_, i) => ({ type: 'turn.start', sid: `idle-${i}`, request_id: `seed-${i}`, text: 'setup', history })));
  await ended;
}

async function startStreams(host: Host): Promise<void> {
  const deltas = host.expect(STREAMING_SESSIONS, (f) => f.type === 'rpc' && JSON.stringify(f['message']).includes('"part 1 "'));
  host.send(
    Array.from({ length: STREAMING_SESSIONS }, (_, i) => ({ type: 'turn.start', sid: `stream-${i}`, request_id: `stream-${i}`, text: `stream 1000000 ${STREAM_EVERY_MS}` })),
  );
  await deltas;
}

interface Run {
  ackMs: number;
  report: ShutdownReport;
}

async function shutDown(host: Host): Promise<Run> {
  const ack = host.expect(1, (f) => f.type === 'shutdown.ack');
  const sentAt = performance.now();
  host.send([{ type: 'shutdown', request_id: 'bench', wait: 2 }]);
  const [frame] = await ack;
  const ackMs = performance.now() - sentAt;
  await host.exited;
  return { ackMs, report: frame as unknown as ShutdownReport };
}

/** The flush's writes, raw, in one synchronous=FULL transaction on the same database. */
function rawFloorFlushMs(file: string, finalized: string[], retained: string[], tailLength: number): number {
  const db = new Database(file);
  db.pragma('synchronous = FULL');
  const finalize = db.prepare("UPDATE sessions SET status = 'finalized', end_reason = ?, retained_reason = NULL, updated_at = ? WHERE sid = ?");
  const retain = db.prepare("UPDATE sessions SET status = 'retained', retained_reason = ?, end_reason = NULL, updated_at = ? WHERE sid = ?");
  const nextSeq = db.prepare('SELECT coalesce(max(seq), -1) + 1 AS seq FROM messages WHERE sid = ?');
  const insert = db.prepare('INSERT INTO messages (sid, seq, role, content, turn_id, created_at) VALUES (?, ?, ?, ?, ?, ?)');
  const endTurn = db.prepare("UPDATE turns SET status = 'interrupted', ended_at = ?, error = ? WHERE sid = ? AND status = 'interrupted'");
  const endBoot = db.prepare("UPDATE boots SET ended_at = ?, end_reason = 'compute_host_shutdown' WHERE boot_id = (SELECT boot_id FROM boots ORDER BY started_at DESC LIMIT 1)");
  const firstSeqs = new Map(retained.map((sid) => [sid, (nextSeq.get(sid) as { seq: number }).seq]));
  const started = performance.now();
  db.transaction(() => {
    const now = Date.now();
    for (const sid of finalized) finalize.run('compute_host_shutdown', now, sid);
    for (const sid of retained) {
      const first = firstSeqs.get(sid)!;
      for (let i = 0; i < tailLength; i++) insert.run(sid, first + i, 'assistant', `part ${i + 1}`, 'floor', now);
      endTurn.run(now, 'drain_deadline', sid);
      retain.run('drain_deadline', now, sid);
    }
    endBoot.run(now);
  })();
  const ms = performance.now() - started;
  db.close();
  return ms;
}

function tailLengthOf(file: string, sid: string): number {
  const db = new Database(file, { readonly: true });
  try {
    return (db.prepare("SELECT count(*) AS n FROM messages WHERE sid = ? AND role = 'assistant' AND content LIKE 'part %'").get(sid) as { n: number }).n;
  } finally {
    db.close();
  }
}

export async function benchShutdown(): Promise<void> {
  process.stdout.write(`(a) ${IDLE_SESSIONS} idle sessions, no live turn…\n`);
  const idleOnly = await withTempDir(async (home) => {
    const host = new Host(home);
    await host.expect(1, (f) => f.type === 'hello');
    await seedIdleSessions(host);
    return shutDown(host);
  });
  process.stdout.write(`(b) ${IDLE_SESSIONS} idle + ${STREAMING_SESSIONS} streaming sessions, and (c) the raw floor…\n`);
  const { withStreams, floorMs, tail } = await withTempDir(async (home) => {
    const host = new Host(home);
    await host.expect(1, (f) => f.type === 'hello');
    await seedIdleSessions(host);
    await startStreams(host);
    const run = await shutDown(host);
    const file = join(home, 'turnhost.db');
    const tail = tailLengthOf(file, run.report.retained[0] ?? 'none');
    return { withStreams: run, floorMs: rawFloorFlushMs(file, run.report.finalized, run.report.retained, tail), tail };
  });
  const b = withStreams.report;
  const flushSpeed = floorMs / b.flush_ms;
  const targets = {
    idleAckMs: { value: round(idleOnly.ackMs, 1), target: '<= 300', met: idleOnly.ackMs <= 300 },
    streamingElapsedMs: { value: b.elapsed_ms, target: '>= 1000 and < 2000', met: b.elapsed_ms >= 1000 && b.elapsed_ms < 2000 },
    deadlineOvershootMs: { value: b.deadline_overshoot_ms, target: '<= 20', met: b.deadline_overshoot_ms !== null && b.deadline_overshoot_ms <= 20 },
    flushMs: { value: b.flush_ms, target: '<= 250', met: b.flush_ms <= 250 },
    flushVsRawFloor: { value: round(flushSpeed, 2), target: '>= 0.50', met: flushSpeed >= 0.5 },
  };
  printTable(
    'shutdown (wait 2 s)',
    ['run', 'ack ms (client)', 'elapsed ms', 'drain ms', 'overshoot ms', 'flush ms', 'finalized', 'retained', 'tail'],
    [
      ['(a) 10k idle', round(idleOnly.ackMs, 1), idleOnly.report.elapsed_ms, idleOnly.report.drain_ms, idleOnly.report.deadline_overshoot_ms ?? '-', idleOnly.report.flush_ms, idleOnly.report.finalized.length, idleOnly.report.retained.length, '-'],
      ['(b) 10k idle + 10 streaming', round(withStreams.ackMs, 1), b.elapsed_ms, b.drain_ms, b.deadline_overshoot_ms ?? '-', b.flush_ms, b.finalized.length, b.retained.length, tail],
      ['(c) raw SQL floor, one transaction', '-', '-', '-', '-', round(floorMs, 1), b.finalized.length, b.retained.length, tail],
    ],
  );
  printTable('targets', ['measure', 'value', 'target', 'verdict'], Object.entries(targets).map(([k, t]) => [k, t.value, t.target, verdict(t.met)]));
  const file = writeResult('shutdown', {
    idleOnly: { ackMs: idleOnly.ackMs, report: { ...idleOnly.report, finalized: idleOnly.report.finalized.length, retained: idleOnly.report.retained.length } },
    withStreams: { ackMs: withStreams.ackMs, tailMessages: tail, report: { ...b, finalized: b.finalized.length, retained: b.retained } },
    rawFloor: { flushMs: floorMs },
    targets,
  });
  process.stdout.write(`\nwrote ${file}\n`);
}
