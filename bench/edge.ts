// `npm run bench -- edge`: the HTTP edge against the unix socket, same daemon build, same run:
// turns/s at 64 sessions over a WebSocket vs over the socket (target >= 85%), one session's p50
// over each (target: within 0.3 ms), and the fan-out of one 10,000-fragment turn to 500 event
// streams (every subscriber gets every event; the spread from the first to the last one's end).
import { request } from 'node:http';
import { join } from 'node:path';
import { readToken } from '../edge/http-token.js';
import { median, printTable, range, round, verdict, withTempDir, writeResult } from './common.js';
import { startDaemon, stopDaemon } from './daemon.js';
import { measurePath, PATH_PLAN, sessionIds } from './driver.js';
import { RpcDriver } from './rpc-driver.js';

const { sessions: SESSIONS, rounds: ROUNDS } = PATH_PLAN;
const SUBSCRIBERS = 500;
const FRAGMENTS = 10_000;
const FAN_OUT_BOUND_MS = 120_000;

interface DoorRun {
  turnsPerSec: number;
  p50Ms: number;
  p99Ms: number;
}

async function measureDoor(driver: RpcDriver, prefix: string): Promise<DoorRun> {
  await driver.createSessions([...sessionIds(prefix, SESSIONS), `${prefix}-lat`]);
  const run = await measurePath(driver, prefix);
  return { turnsPerSec: run.turnsPerSec, p50Ms: run.latency.p50Ms, p99Ms: run.latency.p99Ms };
}

async function edgeUrl(driver: RpcDriver): Promise<string> {
  const status = JSON.parse(await driver.call('host.status', {})) as { result: { http: { url: string } } };
  return status.result.http.url;
}

/** One round on a fresh daemon: both doors, in the order given (the order alternates between rounds). */
function measureRound(socketFirst: boolean): Promise<{ socket: DoorRun; websocket: DoorRun }> {
  return withTempDir(async (home) => {
    const daemon = await startDaemon(home, ['--listen', '127.0.0.1:0']);
    const socketDriver = await RpcDriver.open(join(home, 'turnhost.sock'));
    const url = await edgeUrl(socketDriver);
    const wsDriver = await RpcDriver.openWebSocket(url, readToken(home));
    const runs: Partial<Record<'socket' | 'websocket', DoorRun>> = {};
    for (const door of socketFirst ? (['socket', 'websocket'] as const) : (['websocket', 'socket'] as const)) {
      runs[door] = await measureDoor(door === 'socket' ? socketDriver : wsDriver, door);
    }
    socketDriver.close();
    wsDriver.close();
    await stopDaemon(daemon);
    return { socket: runs.socket!, websocket: runs.websocket! };
  });
}

/**
 * An event stream read only for the end of the turn: the bench's client must not be what it
 * measures. Resolves once the stream is attached (its `ready` came), so no subscriber misses the turn.
 */
function subscribe(url: string, token: string, sid: string, onEnd: () => void): Promise<() => void> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/v1/sessions/${sid}/events`, { headers: { authorization: `Bearer ${token}` } }, (res) => {
      // A marker cut between two chunks is found with the end of the chunk before.
      let tail = '';
      let ready = false;
      let ended = false;
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        const text = tail + chunk;
        tail = chunk.slice(-16);
        if (!ready && text.includes('event: ready')) {
          ready = true;
          resolve(() => req.destroy());
        }
        if (!ended && text.includes('event: turn.end')) {
          ended = true;
          onEnd();
        }
      });
      res.once('close', () => reject(new Error('an event stream closed before its turn ended')));
    });
    req.on('error', reject);
    req.end();
  });
}

async function measureFanOut(): Promise<{ spreadMs: number; lastMs: number; firstMs: number }> {
  return withTempDir(async (home) => {
    const daemon = await startDaemon(home, ['--listen', '127.0.0.1:0', '--max-clients', String(SUBSCRIBERS + 16)]);
    const driver = await RpcDriver.open(join(home, 'turnhost.sock'));
    const url = await edgeUrl(driver);
    const token = readToken(home);
    await driver.call('session.create', { session_id: 'fan' });
    const ends: number[] = [];
    let allEnded: () => void = () => {};
    const done = new Promise<void>((resolve) => (allEnded = resolve));
    const closers = await Promise.all(
      Array.from({ length: SUBSCRIBERS }, () =>
        subscribe(url, token, 'fan', () => {
          ends.push(performance.now());
          if (ends.length === SUBSCRIBERS) allEnded();
        }),
      ),
    );
    const sent = performance.now();
    await driver.call('prompt.submit', { session_id: 'fan', text: Array.from({ length: FRAGMENTS }, (_, i) => `w${i}`).join(' ') });
    await Promise.race([done, new Promise((_, reject) => setTimeout(() => reject(new Error(`only ${ends.length} of ${SUBSCRIBERS} subscribers saw the turn end within ${FAN_OUT_BOUND_MS / 1000} s`)), FAN_OUT_BOUND_MS).unref())]);
    for (const close of closers) close();
    driver.close();
    await stopDaemon(daemon);
    const first = Math.min(...ends);
    const last = Math.max(...ends);
    return { spreadMs: last - first, lastMs: last - sent, firstMs: first - sent };
  });
}

export async function benchEdge(): Promise<void> {
  const rounds: { socket: DoorRun; websocket: DoorRun }[] = [];
  for (let n = 1; n <= ROUNDS; n++) {
    process.stdout.write(`round ${n} of ${ROUNDS}: the unix socket and the WebSocket on one daemon…\n`);
    rounds.push(await measureRound(n % 2 === 1));
  }
  const pick = (door: 'socket' | 'websocket', key: keyof DoorRun) => median(rounds.map((r) => r[door][key]));
  const socket = { turnsPerSec: pick('socket', 'turnsPerSec'), p50Ms: pick('socket', 'p50Ms'), p99Ms: pick('socket', 'p99Ms') };
  const websocket = { turnsPerSec: pick('websocket', 'turnsPerSec'), p50Ms: pick('websocket', 'p50Ms'), p99Ms: pick('websocket', 'p99Ms') };
  process.stdout.write(`fan-out: one turn of ${FRAGMENTS} fragments to ${SUBSCRIBERS} event streams…\n`);
  const fanOut = await measureFanOut();
  printTable(
    `turns through each door of one daemon (${SESSIONS} sessions; one session back to back; median of ${ROUNDS} rounds)`,
    ['door', `turns/s at ${SESSIONS}`, 'range', 'p50 ms', 'p99 ms'],
    [
      ['unix socket', round(socket.turnsPerSec), range(rounds.map((r) => r.socket.turnsPerSec)), round(socket.p50Ms, 3), round(socket.p99Ms, 3)],
      ['WebSocket (edge)', round(websocket.turnsPerSec), range(rounds.map((r) => r.websocket.turnsPerSec)), round(websocket.p50Ms, 3), round(websocket.p99Ms, 3)],
    ],
  );
  printTable(`fan-out: ${SUBSCRIBERS} event streams, one turn of ${FRAGMENTS} fragments`, ['measure', 'ms'], [
    ['submit → first subscriber has the turn end', round(fanOut.firstMs)],
    ['submit → last subscriber has the turn end', round(fanOut.lastMs)],
    ['first → last subscriber', round(fanOut.spreadMs)],
  ]);
  const share = websocket.turnsPerSec / socket.turnsPerSec;
  const p50GapMs = websocket.p50Ms - socket.p50Ms;
  const targets = {
    websocketShareOfSocket: { value: `${round(share * 100, 1)}%`, target: '>= 85%', met: share >= 0.85 },
    websocketP50GapMs: { value: round(p50GapMs, 3), target: '<= 0.3', met: p50GapMs <= 0.3 },
  };
  printTable('targets', ['measure', 'value', 'target', 'verdict'], Object.entries(targets).map(([k, t]) => [k, t.value, t.target, verdict(t.met)]));
  const file = writeResult('edge', { sessions: SESSIONS, rounds: ROUNDS, socket, websocket, runs: rounds, fanOut: { subscribers: SUBSCRIBERS, fragments: FRAGMENTS, ...fanOut }, targets });
  process.stdout.write(`\nwrote ${file}\n`);
}
