// `npm run bench -- queue`: 1,000 prompts submitted to one busy session through the daemon
// (each committed to the queue before it is answered), then drained, next to the same 1,000
// prompts sent to a host alone back to back (the floor, measured in the same run). Target: the
// queue path at no less than 50% of the host's plain turn rate (issue 13).
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { CLI, median, printTable, range, round, ROUNDS, verdict, withTempDir, writeResult } from './common.js';
import { startDaemon, stopDaemon } from './daemon.js';
import { backToBack, TurnProcess } from './driver.js';

const PROMPTS = 1000;
const NEWLINE = 0x0a;
const HEAD_BYTES = 160;
const TURN_END = '{"jsonrpc":"2.0","method":"event","params":{"type":"turn.end"';
const WARMUP = 200;
const SID = 'busy';

/**
 * The daemon's socket, counting answers to submits and the session's turn.end events. It looks at
 * each line's first bytes only: the queue's events carry the whole queue (110 MB in a run). A cut
 * connection fails the run instead of leaving it waiting.
 */
class QueueClient {
  private nextId = 0;
  private answered = 0;
  private ended = 0;
  /** The start of the line being read, up to HEAD_BYTES. */
  private head: Buffer[] = [];
  private headBytes = 0;
  private readonly waits: { what: 'answered' | 'ended'; count: number; resolve: () => void; reject: (err: Error) => void }[] = [];
  private closed = false;

  private constructor(private readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => this.read(chunk));
    socket.on('close', () => {
      this.closed = true;
      for (const wait of this.waits.splice(0)) wait.reject(new Error(`the daemon closed the connection after ${this.answered} answers and ${this.ended} turn ends`));
    });
  }

  private read(chunk: Buffer): void {
    let start = 0;
    for (let newline = chunk.indexOf(NEWLINE); newline !== -1; newline = chunk.indexOf(NEWLINE, start)) {
      this.keepHead(chunk.subarray(start, newline));
      this.line(Buffer.concat(this.head).toString('latin1'));
      this.head = [];
      this.headBytes = 0;
      start = newline + 1;
    }
    this.keepHead(chunk.subarray(start));
  }

  private keepHead(piece: Buffer): void {
    if (this.headBytes >= HEAD_BYTES || piece.length === 0) return;
    const kept = piece.subarray(0, HEAD_BYTES - this.headBytes);
    this.head.push(kept);
    this.headBytes += kept.length;
  }

  private line(head: string): void {
    if (head.startsWith(TURN_END)) this.ended++;
    else if (head.includes('"status":"queued"')) this.answered++;
    else if (head.includes('"error"')) throw new Error(`the daemon refused a submit: ${head}`);
    for (const wait of this.waits.splice(0)) {
      if (this[wait.what] >= wait.count) wait.resolve();
      else this.waits.push(wait);
    }
  }

  static open(path: string): Promise<QueueClient> {
    return new Promise((resolve, reject) => {
      const socket = connect(path);
      socket.once('connect', () => resolve(new QueueClient(socket)));
      socket.once('error', reject);
    });
  }

  send(method: string, params: object): void {
    this.socket.write(`{"jsonrpc":"2.0","id":${++this.nextId},"method":"${method}","params":${JSON.stringify(params)}}\n`);
  }

  until(what: 'answered' | 'ended', count: number): Promise<void> {
    if (this[what] >= count) return Promise.resolve();
    if (this.closed) return Promise.reject(new Error('the daemon closed the connection'));
    return new Promise((resolve, reject) => this.waits.push({ what, count, resolve, reject }));
  }

  close(): void {
    this.socket.end();
  }
}

/** Busy turn, 1,000 submits (timed until the last is answered `queued`), then a stop that keeps the queue and the drain (timed). */
async function queueThenDrain(home: string): Promise<{ queueMs: number; drainMs: number }> {
  const daemon = await startDaemon(home);
  const client = await QueueClient.open(join(home, 'turnhost.sock'));
  try {
    client.send('prompt.submit', { session_id: SID, text: '/sleep 60' });
    const queueStart = performance.now();
    for (let i = 0; i < PROMPTS; i++) client.send('prompt.submit', { session_id: SID, text: 'hello', client_message_id: `m-${i}` });
    await client.until('answered', PROMPTS);
    const queueMs = performance.now() - queueStart;
    const drainStart = performance.now();
    client.send('session.interrupt', { session_id: SID, keep_queue: true });
    await client.until('ended', PROMPTS + 1);
    return { queueMs, drainMs: performance.now() - drainStart };
  } finally {
    client.close();
    await stopDaemon(daemon);
  }
}

/** The host alone: the same prompts, one after the other, on one session. */
async function floorRate(): Promise<number> {
  return withTempDir(async (dir) => {
    const proc = new TurnProcess(process.execPath, [CLI, 'host', '--home', dir]);
    await proc.hello;
    const latency = await backToBack(proc, SID, WARMUP, PROMPTS);
    await proc.close();
    return 1000 / latency.meanMs;
  });
}

export async function benchQueue(): Promise<void> {
  // Each measure runs for about half a second, where this machine's speed drifts by a third from
  // one run to the next: rounds of both, interleaved, and the median of each.
  const floors: number[] = [];
  const runs: { queueMs: number; drainMs: number; turnsPerSec: number }[] = [];
  for (let n = 1; n <= ROUNDS; n++) {
    process.stdout.write(`round ${n} of ${ROUNDS}: the host alone (one session, back to back), then the queue through the daemon…\n`);
    floors.push(await floorRate());
    const queued = await withTempDir(queueThenDrain);
    runs.push({ ...queued, turnsPerSec: (PROMPTS * 1000) / (queued.queueMs + queued.drainMs) });
  }
  const floor = median(floors);
  const queued = runs.find((r) => r.turnsPerSec === median(runs.map((q) => q.turnsPerSec)))!;
  const ratio = queued.turnsPerSec / floor;
  printTable(
    `${PROMPTS} prompts to one session (median of ${ROUNDS} rounds; range)`,
    ['path', 'turns/s', 'range', 'queueing ms', 'draining ms'],
    [
      ['host alone, back to back', round(floor), range(floors), '', ''],
      ['daemon: queued while busy, then drained', round(queued.turnsPerSec), range(runs.map((r) => r.turnsPerSec)), round(queued.queueMs), round(queued.drainMs)],
    ],
  );
  const targets = { queueRateOfFloor: { value: `${round(ratio * 100, 1)}%`, target: '>= 50%', met: ratio >= 0.5 } };
  printTable('targets', ['measure', 'value', 'target', 'verdict'], Object.entries(targets).map(([k, t]) => [k, t.value, t.target, verdict(t.met)]));
  const file = writeResult('queue', { prompts: PROMPTS, rounds: ROUNDS, floor: { turnsPerSec: floor, runs: floors }, queued: { ...queued, runs }, targets });
  process.stdout.write(`\nwrote ${file}\n`);
}
