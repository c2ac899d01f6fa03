// `npm run bench -- cluster`: nodes on one PostgreSQL (PROTOCOL.md §6.2), on the one server this
// bench starts. Takeover: from the kill -9 of the node that owns a session to the first
// turn.started of that session on another node, whose client names it every 100 ms. Throughput:
// 64 sessions spread over 1, 2 and 3 nodes (host processes) on this one machine, closed loop, with
// the database's share of the CPU the run used. Forwarding: one session owned by node a, turns back
// to back from a client of a's socket and from a client of b's, which b forwards to a.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Harness, type HostProcess } from '../test/helpers/processes.js';
import { TestPostgres } from '../test/helpers/postgres.js';
import { CLI, median, printTable, round, ROUNDS, withTempDir, writeResult } from './common.js';
import { startDaemon, stopDaemon } from './daemon.js';
import { backToBack, closedLoop, sessionIds, sleep, TurnProcess, type Latency } from './driver.js';
import { RpcDriver } from './rpc-driver.js';
import { RpcClient } from '../client/rpc-connection.js';

const LEASES_SECS = [2, 10];
const NODE_COUNTS = [1, 2, 3];
const SESSIONS = 64;
const RETRY_MS = 100;

/** CPU ticks (user + system) so far of every process whose command is `name`. */
function ticksOf(name: string): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() !== name) continue;
      const fields = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]!.split(' ');
      total += Number(fields[11]) + Number(fields[12]);
    } catch {
      // gone meanwhile
    }
  }
  return total;
}

/** Until a turn of the session starts on `host`: the milliseconds from `since`. */
async function firstStart(host: HostProcess, sid: string, since: number): Promise<number> {
  for (let attempt = 0; ; attempt++) {
    const requestId = `take-${attempt}`;
    host.send({ type: 'turn.start', sid, request_id: requestId, text: 'taken over' });
    const answer = await host.nextOf(['turn.started', 'turn.error'], { where: (f) => f['request_id'] === requestId, timeoutMs: 30_000 });
    if (answer.type === 'turn.started') return performance.now() - since;
    await sleep(RETRY_MS);
  }
}

async function takeover(server: TestPostgres, leaseSecs: number): Promise<number> {
  const h = new Harness();
  try {
    const url = await server.database();
    const args = (id: string) => ['--store', url, '--node-id', id, '--lease-secs', String(leaseSecs)];
    const owner = await h.startHost(h.tempDir(), args('owner'));
    const other = await h.startHost(h.tempDir(), args('other'));
    owner.send({ type: 'turn.start', sid: 's1', request_id: 'long', text: 'long\n/sleep 60' });
    await owner.next('turn.started');
    // Somewhere in the lease's renewal period, as a crash would fall.
    await sleep(Math.random() * (leaseSecs * 1000) / 3);
    const killedAt = performance.now();
    owner.kill('SIGKILL');
    return await firstStart(other, 's1', killedAt);
  } finally {
    await h.cleanup();
  }
}

interface SpreadResult {
  nodes: number;
  turnsPerSec: number;
  databaseCpuShare: number;
}

async function spread(server: TestPostgres, nodes: number): Promise<SpreadResult> {
  const h = new Harness();
  const url = await server.database();
  const procs = Array.from({ length: nodes }, (_, i) => new TurnProcess(process.execPath, [CLI, 'host', '--home', h.tempDir(), '--workers', '64', '--store', url, '--node-id', `n${i}`]));
  try {
    await Promise.all(procs.map((p) => p.hello));
    const sids = sessionIds('c', SESSIONS);
    const share = (i: number) => sids.filter((_, k) => k % nodes === i);
    const before = { db: ticksOf('postgres'), hosts: ticksOf('node') };
    const runs = await Promise.all(procs.map((p, i) => closedLoop(p, share(i), 500, 3000)));
    const db = ticksOf('postgres') - before.db;
    const all = db + (ticksOf('node') - before.hosts);
    return { nodes, turnsPerSec: runs.reduce((sum, r) => sum + r.turnsPerSec, 0), databaseCpuShare: db / all };
  } finally {
    await Promise.all(procs.map((p) => p.close()));
    await h.cleanup();
  }
}

const FORWARD_WARMUP = 200;
const FORWARD_TURNS = 2000;

interface ForwardRound {
  owner: Latency;
  forwarded: Latency;
  /** A forwarded call on a new client of b (its link opens, with the handshake) and the next one, ms, medians. */
  firstCallMs: number;
  nextCallMs: number;
}

/** New clients of b, one forwarded call each, then one more on the same client: the link's opening (its handshake) is the difference. */
const LINK_OPENINGS = 20;

async function linkOpening(socket: string, sid: string): Promise<{ firstCallMs: number; nextCallMs: number }> {
  const first: number[] = [];
  const next: number[] = [];
  for (let i = 0; i < LINK_OPENINGS; i++) {
    const client = await RpcClient.connect(socket);
    try {
      for (const times of [first, next]) {
        const began = performance.now();
        await client.call('session.queue.get', { session_id: sid });
        times.push(performance.now() - began);
      }
    } finally {
      client.close();
    }
  }
  return { firstCallMs: median(first), nextCallMs: median(next) };
}

/** One session on node a: its turns from a client of a, then from a client of b (forwarded to a), back to back. */
async function forwarding(server: TestPostgres): Promise<ForwardRound> {
  const url = await server.database();
  return withTempDir((a) =>
    withTempDir(async (b) => {
      const args = (id: string) => ['--store', url, '--node-id', id, '--listen', '127.0.0.1:0'];
      const daemons = [await startDaemon(a, args('a')), await startDaemon(b, args('b'))];
      const [onA, onB] = [await RpcDriver.open(join(a, 'turnhost.sock')), await RpcDriver.open(join(b, 'turnhost.sock'))];
      try {
        await onA.createSessions(['f1']);
        const owner = await backToBack(onA, 'f1', FORWARD_WARMUP, FORWARD_TURNS);
        const forwarded = await backToBack(onB, 'f1', FORWARD_WARMUP, FORWARD_TURNS);
        return { owner, forwarded, ...(await linkOpening(join(b, 'turnhost.sock'), 'f1')) };
      } finally {
        onA.close();
        onB.close();
        await Promise.all(daemons.map(stopDaemon));
      }
    }),
  );
}

export async function benchCluster(): Promise<void> {
  const server = await TestPostgres.start();
  const takeovers: Record<string, number[]> = {};
  const spreads: SpreadResult[][] = NODE_COUNTS.map(() => []);
  const forwards: ForwardRound[] = [];
  try {
    for (let n = 1; n <= ROUNDS; n++) {
      process.stdout.write(`round ${n} of ${ROUNDS}: a turn on the owning node and a forwarded one…\n`);
      forwards.push(await forwarding(server));
      for (const leaseSecs of LEASES_SECS) {
        process.stdout.write(`round ${n} of ${ROUNDS}: takeover with --lease-secs ${leaseSecs}…\n`);
        (takeovers[leaseSecs] ??= []).push(await takeover(server, leaseSecs));
      }
      for (const [i, nodes] of NODE_COUNTS.entries()) {
        process.stdout.write(`round ${n} of ${ROUNDS}: ${SESSIONS} sessions over ${nodes} node(s)…\n`);
        spreads[i]!.push(await spread(server, nodes));
      }
    }
  } finally {
    await server.stop();
  }
  printTable(
    `takeover after kill -9: from the kill to the first turn.started on another node (median of ${ROUNDS}; each round)`,
    ['--lease-secs', 'ms', 'rounds'],
    LEASES_SECS.map((s) => [s, round(median(takeovers[s]!)), takeovers[s]!.map((ms) => round(ms)).join(', ')]),
  );
  printTable(
    `turns per second, ${SESSIONS} sessions spread over the nodes (closed loop, script agent, one 2-core machine; median of ${ROUNDS})`,
    ['nodes', 'turns/s', 'database share of the CPU used'],
    spreads.map((runs, i) => [NODE_COUNTS[i]!, round(median(runs.map((r) => r.turnsPerSec))), `${round(100 * median(runs.map((r) => r.databaseCpuShare)), 1)}%`]),
  );
  const latency = (pick: (r: ForwardRound) => Latency) => [round(median(forwards.map((r) => pick(r).p50Ms)), 3), round(median(forwards.map((r) => pick(r).p99Ms)), 3)];
  const [ownerP50, ownerP99] = latency((r) => r.owner);
  const [forwardedP50, forwardedP99] = latency((r) => r.forwarded);
  printTable(
    `one session's turns back to back, script agent (${FORWARD_TURNS} turns; median of ${ROUNDS})`,
    ['client of', 'p50 ms', 'p99 ms'],
    [
      ['the owning node (a)', ownerP50!, ownerP99!],
      ['another node (b), forwarded to a', forwardedP50!, forwardedP99!],
      ['extra', round(forwardedP50! - ownerP50!, 3), round(forwardedP99! - ownerP99!, 3)],
    ],
  );
  const firstCall = round(median(forwards.map((r) => r.firstCallMs)), 3);
  const nextCall = round(median(forwards.map((r) => r.nextCallMs)), 3);
  printTable(
    `a new client of b: its first forwarded call opens a link to a (the peer handshake), the next one uses it (${LINK_OPENINGS} clients a round; median of ${ROUNDS})`,
    ['call', 'ms'],
    [
      ['first (the link opens)', firstCall],
      ['next (the link is open)', nextCall],
      ['the link\'s opening, once per link', round(firstCall - nextCall, 3)],
    ],
  );
  const file = writeResult('cluster', { takeovers, spreads, forwards });
  process.stdout.write(`\nwrote ${file}\n`);
}
