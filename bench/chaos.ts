// `npm run chaos -- --minutes N [--nodes 3] [--seed S]`: a cluster under faults, in the manner of
// Jepsen. Nodes (daemons in homes of their own, edges on 127.0.0.1) on one PostgreSQL the run
// starts, the last of them behind a TCP proxy; clients on every node submit prompts with
// `client_message_id`s to shared sessions (`on_busy: queue`), moving to another node when theirs
// goes away and submitting again, with the same id, whatever was not acknowledged. Faults fall at
// random moments, one at a time: kill -9 of a whole node then its start in its own home, SIGSTOP
// of a node past its lease then SIGCONT, PostgreSQL stopped and started, and the proxied node's
// connections cut mid-transaction. Then a quiet period: every node up, the clients' last submits
// finished, every session named once from a live node, until no turn runs and no queue waits.
// The checker (chaos/checker.ts) holds the store to what was acknowledged. Prints what was
// acknowledged, the faults by kind and what was found; writes bench/results/chaos.json (or
// chaos-<minutes>m.json for a run other than docs/BENCHMARKS.md's 10 minutes); exits 1 on any violation.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RpcClient } from '../client/rpc-connection.js';
import { freePort, TestPostgres } from '../test/helpers/postgres.js';
import { seededRandom } from '../test/helpers/random.js';
import { ChaosClient } from './chaos/chaos-client.js';
import { ChaosNode } from './chaos/chaos-node.js';
import { check, violations, type Findings } from './chaos/checker.js';
import { TcpProxy } from '../test/helpers/tcp-proxy.js';
import { CLI, printTable, writeResult } from './common.js';

const LEASE_SECS = 2;
const SESSIONS = 6;
const CLIENTS_PER_NODE = 2;
/** Each prompt's turn sleeps this long: faults fall on running turns and on queues behind them. */
const TURN_SECS = 0.2;
/** Between two faults: a few seconds, so that each one's recovery is under way when the next falls. */
const FAULT_GAP_MS = { min: 3_000, spread: 7_000 };
/** The clients' last submits, once faults stop, are acknowledged within this (or counted unacknowledged). */
const LAST_SUBMITS_MS = 60_000;
/** After every session is named, the sessions settle (takeovers, queues) within this. */
const SETTLE_MS = 90_000;

type FaultKind = 'kill' | 'pause' | 'postgres' | 'cut';
const FAULT_KINDS: readonly FaultKind[] = ['kill', 'pause', 'postgres', 'cut'];

function numberArg(name: string, fallback: number): number {
  const at = process.argv.indexOf(name);
  const value = at === -1 ? fallback : Number(process.argv[at + 1]);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number`);
  return value;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface Cluster {
  server: TestPostgres;
  proxy: TcpProxy;
  nodes: ChaosNode[];
  url: string;
  random: () => number;
  started: number;
  log: string[];
}

function note(cluster: Cluster, text: string): void {
  const line = `${((Date.now() - cluster.started) / 1000).toFixed(1).padStart(6)} s  ${text}`;
  cluster.log.push(line);
  process.stdout.write(`${line}\n`);
}

/** A node started again after a fault must come up (issue 35, point 4): a failure to is a finding. */
async function startAgain(cluster: Cluster, node: ChaosNode, failures: string[]): Promise<void> {
  try {
    await node.start();
  } catch (err) {
    failures.push(`${node.id}: ${(err as Error).message.split('\n')[0]}`);
    note(cluster, `node ${node.id} did not start again: ${(err as Error).message.split('\n')[0]}`);
  }
}

async function fault(cluster: Cluster, kind: FaultKind, startFailures: string[]): Promise<void> {
  const { nodes, random, server, proxy } = cluster;
  const node = nodes[Math.floor(random() * nodes.length)]!;
  switch (kind) {
    case 'kill': {
      await node.kill();
      const downMs = 200 + random() * 3_000;
      note(cluster, `kill -9 of node ${node.id} (daemon and host); started again in ${Math.round(downMs)} ms`);
      await sleep(downMs);
      await startAgain(cluster, node, startFailures);
      return;
    }
    case 'pause': {
      const pausedMs = LEASE_SECS * 1000 + 500 + random() * 2_500;
      note(cluster, `SIGSTOP of node ${node.id} for ${Math.round(pausedMs)} ms (its lease: ${LEASE_SECS} s)`);
      node.pause(true);
      await sleep(pausedMs);
      node.pause(false);
      return;
    }
    case 'postgres': {
      const downMs = 1_000 + random() * 2_000;
      note(cluster, `PostgreSQL stopped for ${Math.round(downMs)} ms`);
      await server.pause();
      await sleep(downMs);
      await server.resume();
      return;
    }
    case 'cut':
      note(cluster, `node ${nodes.at(-1)!.id}'s ${proxy.cut()} connections to PostgreSQL cut`);
      return;
  }
}

async function faults(cluster: Cluster, endAt: number, startFailures: string[]): Promise<Record<FaultKind, number>> {
  const counts: Record<FaultKind, number> = { kill: 0, pause: 0, postgres: 0, cut: 0 };
  for (;;) {
    await sleep(FAULT_GAP_MS.min + cluster.random() * FAULT_GAP_MS.spread);
    if (Date.now() > endAt) return counts;
    const kind = FAULT_KINDS[Math.floor(cluster.random() * FAULT_KINDS.length)]!;
    counts[kind]++;
    await fault(cluster, kind, startFailures);
  }
}

/** Every session named once from a live node (a resume): a dead owner's sessions are taken over. */
async function nameEverySession(node: ChaosNode, sessions: readonly string[]): Promise<void> {
  const rpc = await RpcClient.connect(node.socket);
  try {
    for (const sid of sessions) await rpc.call('session.resume', { session_id: sid }, 30_000);
  } finally {
    rpc.close();
  }
}

/** Until no turn runs and no prompt waits in a queue, as the store says; false when SETTLE_MS passed first. */
async function settled(cluster: Cluster): Promise<boolean> {
  const deadline = Date.now() + SETTLE_MS;
  while (Date.now() < deadline) {
    const [row] = await cluster.server.query<{ running: number; queued: number }>(
      cluster.url,
      "SELECT (SELECT count(*)::int FROM turns WHERE status = 'running') AS running, (SELECT count(*)::int FROM queue) AS queued",
    );
    if (row?.running === 0 && row.queued === 0) return true;
    await sleep(250);
  }
  return false;
}

/** Where the sessions that did not settle stand: their leases, running turns and queues, and the nodes' heartbeats. */
async function unsettled(cluster: Cluster): Promise<string[]> {
  const rows = await cluster.server.query<{ sid: string; node_id: string | null; epoch: number | null; expires_in_ms: number | null; running: string | null; queued: number }>(
    cluster.url,
    `SELECT s.sid, l.node_id, l.epoch::int AS epoch, (extract(epoch FROM l.expires_at - now()) * 1000)::int AS expires_in_ms,
            (SELECT string_agg(turn_id, ',') FROM turns t WHERE t.sid = s.sid AND t.status = 'running') AS running,
            (SELECT count(*)::int FROM queue q WHERE q.sid = s.sid) AS queued
     FROM sessions s LEFT JOIN leases l USING (sid) ORDER BY s.sid`,
  );
  const nodes = await cluster.server.query<{ node_id: string; age_ms: number }>(cluster.url, 'SELECT node_id, (extract(epoch FROM now() - heartbeat_at) * 1000)::int AS age_ms FROM nodes ORDER BY node_id');
  const described = await Promise.all(cluster.nodes.map((node) => replSays(node, '.sessions')));
  return [
    ...described.map((text, i) => `  ${cluster.nodes[i]!.id}'s .sessions: ${text.replace(/\s+/g, ' ').slice(0, 2000)}`),
    ...rows.filter((r) => r.running !== null || r.queued > 0).map((r) => `  ${r.sid}: lease ${r.node_id ?? 'none'}#${r.epoch ?? '-'} (expires in ${r.expires_in_ms ?? '-'} ms), running ${r.running ?? 'none'}, ${r.queued} queued`),
    `  heartbeats: ${nodes.map((n) => `${n.node_id} ${n.age_ms} ms ago`).join(', ')}`,
  ];
}

function replSays(node: ChaosNode, command: string): Promise<string> {
  const repl = spawn(process.execPath, [CLI, 'repl', '--home', node.home], { stdio: ['pipe', 'pipe', 'ignore'] });
  let out = '';
  repl.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  repl.stdin.end(`${command}\n`);
  const timer = setTimeout(() => repl.kill('SIGKILL'), 10_000);
  return new Promise((resolve) => repl.once('close', () => {
    clearTimeout(timer);
    resolve(out);
  }));
}

async function main(): Promise<number> {
  const minutes = numberArg('--minutes', 10);
  const nodeCount = numberArg('--nodes', 3);
  const seed = numberArg('--seed', Date.now() % 1_000_000);
  const dir = mkdtempSync(join(tmpdir(), 'turnhost-chaos-'));
  const server = await TestPostgres.start();
  const proxy = await TcpProxy.start(server.port);
  const clients: ChaosClient[] = [];
  let cluster: Cluster | undefined;
  const nodes: ChaosNode[] = [];
  const removeAll = async (): Promise<void> => {
    await proxy.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  // Interrupted (Ctrl-C): every process it started is killed and every folder removed, at once.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      void Promise.all(nodes.map((node) => node.kill().catch(() => {})))
        .then(removeAll)
        .finally(() => process.exit(130));
    });
  }
  try {
    const url = await server.database();
    const proxied = url.replace(`:${server.port}/`, `:${proxy.port}/`);
    for (let i = 1; i <= nodeCount; i++) {
      nodes.push(new ChaosNode(`n${i}`, join(dir, `n${i}`), await freePort(), i === nodeCount ? proxied : url, LEASE_SECS));
    }
    for (const node of nodes) await node.start();
    cluster = { server, proxy, nodes, url, random: seededRandom(seed), started: Date.now(), log: [] };
    note(cluster, `${nodeCount} nodes up (node ${nodes.at(-1)!.id} behind the proxy); seed ${seed}; ${minutes} min of faults`);

    const sessions = Array.from({ length: SESSIONS }, (_, i) => `chaos-${i}`);
    for (let i = 0; i < nodeCount * CLIENTS_PER_NODE; i++) {
      clients.push(new ChaosClient(`c${i}`, nodes, sessions, seededRandom(seed + i + 1), TURN_SECS));
    }
    let stopping = false;
    let giveUpAt = Number.POSITIVE_INFINITY;
    const runs = clients.map((client) => client.run(() => stopping, () => giveUpAt));
    const startFailures: string[] = [];
    const counts = await faults(cluster, cluster.started + minutes * 60_000, startFailures);

    note(cluster, 'faults stop: every node up, the clients finish their last submits');
    for (const node of nodes) {
      if (node.paused) node.pause(false);
      if (!node.running) await startAgain(cluster, node, startFailures);
    }
    stopping = true;
    giveUpAt = Date.now() + LAST_SUBMITS_MS;
    await Promise.all(runs);
    note(cluster, 'every session named once from a live node; waiting for the sessions to settle');
    await nameEverySession(nodes.find((n) => n.running)!, sessions);
    const calm = await settled(cluster);
    note(cluster, calm ? 'settled: no turn running, no prompt queued' : `not settled within ${SETTLE_MS} ms`);
    if (!calm) for (const line of await unsettled(cluster)) note(cluster, line);

    const acknowledged = clients.flatMap((c) => c.record.acknowledged);
    const unacknowledged = clients.flatMap((c) => c.record.unacknowledged);
    const findings = await check(url, acknowledged, unacknowledged);
    const failures = new Map<string, number>();
    for (const client of clients) for (const [kind, n] of client.record.failures) failures.set(kind, (failures.get(kind) ?? 0) + n);
    report(cluster, { minutes, nodeCount, seed, counts, findings, startFailures, failures });
    return violations(findings) + startFailures.length === 0 ? 0 : 1;
  } finally {
    for (const node of nodes) await node.stop().catch(() => {});
    await removeAll();
  }
}

interface Report {
  minutes: number;
  nodeCount: number;
  seed: number;
  counts: Record<FaultKind, number>;
  findings: Findings;
  startFailures: string[];
  failures: Map<string, number>;
}

function report(cluster: Cluster, r: Report): void {
  const f = r.findings;
  printTable('Faults', ['kill -9 of a node', 'SIGSTOP past the lease', 'PostgreSQL restarted', 'connections cut'], [[r.counts.kill, r.counts.pause, r.counts.postgres, r.counts.cut]]);
  printTable('Submits', ['acknowledged', 'unacknowledged at the end', 'of those, ran', 'turns'], [
    [f.acknowledged, f.unacknowledged, f.unacknowledgedRan, Object.entries(f.turns).map(([status, n]) => `${status} ${n}`).join(', ')],
  ]);
  printTable('Refusals and failures the clients saw (each then tried again)', ['what', 'times'], [...r.failures].sort((a, b) => b[1] - a[1]).map(([what, n]) => [what, n]));
  printTable('Checker', ['lost', 'doubled', 'out of order', 'turns left running', 'prompts left queued', 'nodes that did not start'], [
    [f.lost.length, f.doubled.length, f.outOfOrder.length, f.leftRunning, f.leftQueued, r.startFailures.length],
  ]);
  for (const line of [...f.lost.map((l) => `lost: ${l}`), ...f.doubled.map((d) => `doubled: ${d}`), ...f.outOfOrder.map((o) => `out of order: ${o}`), ...r.startFailures.map((s) => `did not start: ${s}`)]) {
    process.stdout.write(`${line}\n`);
  }
  const total = violations(f) + r.startFailures.length;
  process.stdout.write(`\n${total === 0 ? 'no violation' : `${total} violation(s)`}\n`);
  const name = r.minutes === 10 ? 'chaos' : `chaos-${r.minutes}m`;
  const file = writeResult(name, { minutes: r.minutes, nodes: r.nodeCount, seed: r.seed, leaseSecs: LEASE_SECS, faults: r.counts, ...f, startFailures: r.startFailures, failures: Object.fromEntries(r.failures), timeline: cluster.log });
  process.stdout.write(`results: ${file}\n`);
}

process.exit(await main());
