// `npm run bench -- webhooks`: how long after a turn's end its webhook reaches a receiver
// (PROTOCOL.md §8.2). One daemon with a --webhook to a receiver in this process, which verifies
// each delivery with the standardwebhooks library and answers 204; 8 sessions run turns in a closed
// loop through the daemon's socket. Each delay ends when the receiver has the request (its 2xx
// follows at once) and starts at the turn's end as the host committed it (the event's `timestamp`,
// to the millisecond, the same machine's clock), and again at the client's turn.end event (the
// webhook runs beside the client's event, and may beat it).
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { RpcClient } from '../client/rpc-connection.js';
import { printTable, round, withTempDir, writeResult } from './common.js';
import { startDaemon, stopDaemon } from './daemon.js';
import { quantile } from './driver.js';

const SESSIONS = 8;
const TURNS_PER_SESSION = 250;

export async function benchWebhooks(): Promise<void> {
  await withTempDir(async (home) => {
    const arrived = new Map<string, number>();
    const sinceCommit: number[] = [];
    let refused = 0;
    let secret = '';
    const receiver = createServer((req, res) => {
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
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const daemon = await startDaemon(home, ['--webhook', url, '--webhook-events', 'turn.end']);
    secret = readFileSync(join(home, 'webhook.secret'), 'utf8').trim();
    const ended = new Map<string, number>();
    const client = await RpcClient.connect(join(home, 'turnhost.sock'));
    try {
      const waiting = new Map<string, () => void>();
      client.onEvent = (e) => {
        if (e.type !== 'turn.end') return;
        ended.set(String(e.payload['turn_id']), performance.now());
        waiting.get(e.session_id)?.();
      };
      const began = performance.now();
      await Promise.all(
        Array.from({ length: SESSIONS }, async (_, i) => {
          const sid = `wh-${i}`;
          await client.call('session.create', { session_id: sid });
          for (let t = 0; t < TURNS_PER_SESSION; t++) {
            const done = new Promise<void>((resolve) => waiting.set(sid, resolve));
            await client.call('prompt.submit', { session_id: sid, text: `turn ${t}` });
            await done;
          }
        }),
      );
      const turnsPerSec = (SESSIONS * TURNS_PER_SESSION) / ((performance.now() - began) / 1000);
      const deadline = Date.now() + 30_000;
      while (arrived.size < ended.size && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      const delays = [...ended].filter(([id]) => arrived.has(id)).map(([id, at]) => arrived.get(id)! - at).sort((a, b) => a - b);
      const result = {
        turns: ended.size,
        delivered: arrived.size,
        refused,
        turnsPerSec: round(turnsPerSec),
        fromCommit: { p50Ms: quantile(sinceCommit, 0.5), p99Ms: quantile(sinceCommit, 0.99), maxMs: Math.max(...sinceCommit) },
        fromClientEvent: { p50Ms: round(quantile(delays, 0.5), 2), p99Ms: round(quantile(delays, 0.99), 2), maxMs: round(delays.at(-1) ?? 0, 2) },
      };
      printTable(
        `turn.end to the receiver's 2xx (${result.turns} turns, ${SESSIONS} sessions in a closed loop at ${result.turnsPerSec} turns/s, script agent, one webhook; ${result.delivered} delivered, ${refused} refused)`,
        ['from', 'p50 ms', 'p99 ms', 'max ms'],
        [
          ["the turn's end (its commit)", result.fromCommit.p50Ms, result.fromCommit.p99Ms, result.fromCommit.maxMs],
          ["the client's turn.end event", result.fromClientEvent.p50Ms, result.fromClientEvent.p99Ms, result.fromClientEvent.maxMs],
        ],
      );
      const file = writeResult('webhooks', result);
      process.stdout.write(`\nwrote ${file}\n`);
    } finally {
      client.close();
      await stopDaemon(daemon);
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
    }
  });
}
