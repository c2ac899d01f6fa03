// `npm run bench -- webhooks`: what a webhook costs a daemon, and how long after a turn's end it
// reaches a receiver (PROTOCOL.md §8.2). 64 sessions run turns in a closed loop through the
// daemon's socket, with no webhook and with one to a receiver in this process (which verifies each
// delivery with the standardwebhooks library and answers 204), in interleaved rounds. Each delay
// ends when the receiver has the request (its 2xx follows at once) and starts at the turn's end as
// the host committed it (the event's `timestamp`, to the millisecond, this machine's clock), and
// again at the client's turn.end event (the webhook goes out beside the client's event, and may
// beat it).
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { RpcClient } from '../client/rpc-connection.js';
import { median, printTable, range, round, ROUNDS, withTempDir, writeResult } from './common.js';
import { startDaemon, stopDaemon } from './daemon.js';
import { cpuTicks, quantile, TICKS_PER_SECOND } from './driver.js';

const SESSIONS = 64;
const TURNS_PER_SESSION = 50;
/** How long the receiver may take to get the last events after the last turn. */
const DRAIN_MS = 30_000;

interface Receiver {
  url: string;
  /** When each turn's event arrived (performance.now()), by turn id. */
  arrived: Map<string, number>;
  /** Receipt minus the event's timestamp, in ms. */
  sinceCommit: number[];
  refused: number;
  setSecret(secret: string): void;
  allArrived(count: number): Promise<void>;
  close(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  const arrived = new Map<string, number>();
  const sinceCommit: number[] = [];
  let refused = 0;
  let secret = '';
  let waiter: { count: number; resolve: () => void } | null = null;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = performance.now();
      const wallAt = Date.now();
      try {
        const event = new Webhook(secret).verify(Buffer.concat(chunks).toString(), req.headers as Record<string, string>) as { timestamp: string; data: { turn_id: string } };
        arrived.set(event.data.turn_id, at);
        sinceCommit.push(wallAt - Date.parse(event.timestamp));
        res.writeHead(204).end();
      } catch {
        refused++;
        res.writeHead(401).end();
      }
      if (waiter !== null && arrived.size >= waiter.count) waiter.resolve();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    arrived,
    sinceCommit,
    get refused() {
      return refused;
    },
    setSecret: (s) => (secret = s),
    allArrived: (count) =>
      new Promise<void>((resolve, reject) => {
        if (arrived.size >= count) return resolve();
        const timer = setTimeout(() => reject(new Error(`${arrived.size} of ${count} events arrived in ${DRAIN_MS} ms`)), DRAIN_MS);
        waiter = { count, resolve: () => (clearTimeout(timer), resolve()) };
      }),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

interface LoopRun {
  turnsPerSec: number;
  /** The client's turn.end time of each turn, by turn id. */
  ended: Map<string, number>;
  /** CPU (user + system) the daemon and its host spent per turn, in µs. */
  cpuUsPerTurn: { daemon: number; host: number };
}

/** 64 sessions in a closed loop. */
async function closedLoop(home: string): Promise<LoopRun> {
  const ended = new Map<string, number>();
  const client = await RpcClient.connect(join(home, 'turnhost.sock'));
  try {
    const waiting = new Map<string, () => void>();
    client.onEvent = (e) => {
      if (e.type !== 'turn.end') return;
      ended.set(String(e.payload['turn_id']), performance.now());
      waiting.get(e.session_id)?.();
    };
    const sids = Array.from({ length: SESSIONS }, (_, i) => `wh-${i}`);
    for (const sid of sids) await client.call('session.create', { session_id: sid });
    const status = await client.call<{ supervisor: { pid: number }; host: { pid: number } }>('host.status', {});
    const pids = { daemon: status.supervisor.pid, host: status.host.pid };
    const ticksBefore = { daemon: cpuTicks(pids.daemon), host: cpuTicks(pids.host) };
    const began = performance.now();
    await Promise.all(
      sids.map(async (sid) => {
        for (let t = 0; t < TURNS_PER_SESSION; t++) {
          const done = new Promise<void>((resolve) => waiting.set(sid, resolve));
          await client.call('prompt.submit', { session_id: sid, text: `turn ${t}` });
          await done;
        }
      }),
    );
    const turns = SESSIONS * TURNS_PER_SESSION;
    const usPerTurn = (pid: number, before: number) => ((cpuTicks(pid) - before) * (1e6 / TICKS_PER_SECOND)) / turns;
    return {
      turnsPerSec: turns / ((performance.now() - began) / 1000),
      ended,
      cpuUsPerTurn: { daemon: usPerTurn(pids.daemon, ticksBefore.daemon), host: usPerTurn(pids.host, ticksBefore.host) },
    };
  } finally {
    client.close();
  }
}

async function roundWithout(): Promise<LoopRun> {
  return withTempDir(async (home) => {
    const daemon = await startDaemon(home);
    try {
      return await closedLoop(home);
    } finally {
      await stopDaemon(daemon);
    }
  });
}

async function roundWith(receiver: Receiver, delays: number[]): Promise<LoopRun> {
  return withTempDir(async (home) => {
    receiver.arrived.clear();
    const daemon = await startDaemon(home, ['--webhook', receiver.url, '--webhook-events', 'turn.end']);
    receiver.setSecret(readFileSync(join(home, 'webhook.secret'), 'utf8').trim());
    try {
      const run = await closedLoop(home);
      await receiver.allArrived(run.ended.size);
      for (const [id, at] of run.ended) delays.push(receiver.arrived.get(id)! - at);
      return run;
    } finally {
      await stopDaemon(daemon);
    }
  });
}

export async function benchWebhooks(): Promise<void> {
  const receiver = await startReceiver();
  try {
    const without: LoopRun[] = [];
    const withWebhook: LoopRun[] = [];
    const delays: number[] = [];
    for (let n = 1; n <= ROUNDS; n++) {
      process.stdout.write(`round ${n} of ${ROUNDS}…\n`);
      without.push(await roundWithout());
      withWebhook.push(await roundWith(receiver, delays));
    }
    const summary = (runs: LoopRun[]) => ({
      turnsPerSec: median(runs.map((r) => r.turnsPerSec)),
      range: range(runs.map((r) => r.turnsPerSec)),
      daemonCpuUs: median(runs.map((r) => r.cpuUsPerTurn.daemon)),
      hostCpuUs: median(runs.map((r) => r.cpuUsPerTurn.host)),
    });
    const fromCommit = receiver.sinceCommit;
    const result = {
      none: summary(without),
      oneWebhook: summary(withWebhook),
      deliveries: fromCommit.length,
      refused: receiver.refused,
      fromCommit: { p50Ms: quantile(fromCommit, 0.5), p99Ms: quantile(fromCommit, 0.99), maxMs: Math.max(...fromCommit) },
      fromClientEvent: { p50Ms: round(quantile(delays, 0.5), 2), p99Ms: round(quantile(delays, 0.99), 2), maxMs: round(Math.max(...delays), 2) },
    };
    printTable(
      `${SESSIONS} sessions in a closed loop through the daemon, script agent; the receiver verifies each delivery in the benchmark's process, on the same 2 cores (median of ${ROUNDS} interleaved rounds)`,
      ['daemon', 'turns/s', 'range', 'daemon CPU µs/turn', 'host CPU µs/turn'],
      [
        ['no webhook', round(result.none.turnsPerSec), result.none.range, round(result.none.daemonCpuUs), round(result.none.hostCpuUs)],
        ['one webhook (turn.end)', round(result.oneWebhook.turnsPerSec), result.oneWebhook.range, round(result.oneWebhook.daemonCpuUs), round(result.oneWebhook.hostCpuUs)],
      ],
    );
    printTable(
      `turn.end to the receiver's 2xx (${result.deliveries} deliveries, ${result.refused} refused)`,
      ['from', 'p50 ms', 'p99 ms', 'max ms'],
      [
        ["the turn's end (its commit)", result.fromCommit.p50Ms, result.fromCommit.p99Ms, result.fromCommit.maxMs],
        ["the client's turn.end event", result.fromClientEvent.p50Ms, result.fromClientEvent.p99Ms, result.fromClientEvent.maxMs],
      ],
    );
    const file = writeResult('webhooks', result);
    process.stdout.write(`\nwrote ${file}\n`);
  } finally {
    await receiver.close();
  }
}
