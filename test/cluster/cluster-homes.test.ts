// A guest's memory on every node (AGENT.md §6): its home follows the session through PostgreSQL.
// Two nodes with homes of their own on one PostgreSQL; the guest keeps its sessions in its HOME.
// A kill -9 of the node that ran it, 2 s after its turn's end, and the other node's guest remembers;
// what was removed is gone there, caches never leave; past the bound nothing more is sent; a fork
// made on the other node takes its source's memory; a server restart inside a snapshot's
// transaction leaves the earlier snapshot whole.
import { expect } from 'chai';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { clusterForSuite, nodeArgs } from '../helpers/cluster.js';
import { hostPid, startDaemon, TestClient, type Daemon } from '../helpers/daemon.js';
import { PYTHON_GUEST, TS_GUEST } from '../helpers/guests.js';
import { Harness, stoppedWithin } from '../helpers/processes.js';
import { ownPostgresForSuite, postgresForSuite } from '../helpers/postgres.js';

const LEASE_SECS = 2;
/** The contract's case: the node dies this long after the turn's end (a snapshot is taken within it). */
const AFTER_TURN_MS = 2000;

/** One turn to its end: its reply (message.complete), or its error thrown. */
async function turn(client: TestClient, sid: string, text: string): Promise<string> {
  const { turn_id } = await client.call<{ turn_id: string }>('prompt.submit', { session_id: sid, text });
  const mark = client.events.length;
  const ended = (e: { type: string; payload: Record<string, unknown> }) => (e.type === 'turn.end' || e.type === 'turn.error') && e.payload['turn_id'] === turn_id;
  await client.until(() => client.events.some(ended), `the end of ${turn_id}`, 60_000);
  const end = client.events.find(ended)!;
  if (end.type === 'turn.error') throw new Error(`the turn failed: ${String(end.payload['message'])}`);
  const complete = client.events.slice(mark).find((e) => e.type === 'message.complete' && e.session_id === sid);
  return String(complete?.payload['text'] ?? '');
}

const python = (marker: string) => ({ command: 'python3', args: [PYTHON_GUEST, marker] });

describe("a guest's home follows its session through PostgreSQL (AGENT.md §6; two nodes, real processes)", function () {
  this.timeout(120_000);
  const h = new Harness();
  const server = postgresForSuite();
  const cluster = clusterForSuite(h, LEASE_SECS);

  interface Nodes {
    url: string;
    dir: string;
    a: Daemon;
    b: Daemon;
    onA: TestClient;
  }

  async function nodes(acp: Record<string, unknown>, extra: Record<string, unknown> = {}): Promise<Nodes> {
    const url = await server().database();
    const dir = h.tempDir('turnhost-homes-');
    const config = join(dir, 'agent.json');
    writeFileSync(config, JSON.stringify({ acp, approval: { default: 'allow' }, ...extra }));
    const start = (id: string) => startDaemon(h, [...nodeArgs(url, id, LEASE_SECS), '--agent', 'acp', '--agent-config', config, '--listen', '127.0.0.1:0'], {}, join(dir, `home-${id}`));
    const [a, b] = await Promise.all([start('a'), start('b')]);
    return { url, dir, a, b, onA: await cluster.clientOf(a) };
  }

  /** Node a dies with its host, as a machine does; b takes its sessions once their leases expire. */
  async function killA(n: Nodes, sids: readonly string[]): Promise<TestClient> {
    for (const pid of [n.a.process.pid, await hostPid(n.onA)]) process.kill(pid, 'SIGKILL');
    await n.a.process.waitExit();
    for (const sid of sids) await server().leaseExpired(n.url, sid);
    return cluster.clientOf(n.b);
  }

  it('the Python guest remembers across a kill -9 of its node 2 s after its turn: the other node restores its home before session/load', async () => {
    const n = await nodes(python(h.tempDir('turnhost-guests-')));
    await n.onA.call('session.create', { session_id: 'g' });
    expect(await turn(n.onA, 'g', 'one')).to.equal('python guest: one');
    expect(await turn(n.onA, 'g', 'two')).to.equal('python guest: two');
    await new Promise((resolve) => setTimeout(resolve, AFTER_TURN_MS));
    const onB = await killA(n, ['g']);
    await onB.call('session.resume', { session_id: 'g' });
    expect(await turn(onB, 'g', 'history')).to.equal('seen: one | two | history');
    expect(onB.events.some((e) => e.type === 'status.update' && e.payload['kind'] === 'context'), 'no "starts without its memory"').to.equal(false);
    const restored = readFileSync(join(n.dir, 'home-b', 'logs', 'turnhost.log'), 'utf8');
    expect(restored).to.match(/"name":"home-restored","sid":"g"/);
  });

  it('a file removed on one node is gone on the other; caches (.cache, node_modules) never go to the store; past max_mib nothing more is sent, said once', async () => {
    const n = await nodes(python(h.tempDir('turnhost-guests-')), {});
    await n.onA.call('session.create', { session_id: 'f' });
    await turn(n.onA, 'f', 'run mkdir -p "$HOME/.cache" "$HOME/proj/node_modules/dep" && echo c > "$HOME/.cache/c" && echo n > "$HOME/proj/node_modules/dep/n" && echo keep > "$HOME/keep" && echo gone > "$HOME/gone"');
    await turn(n.onA, 'f', 'run rm "$HOME/gone"');
    await new Promise((resolve) => setTimeout(resolve, AFTER_TURN_MS));
    const stored = await server().query<{ path: string }>(n.url, "SELECT path FROM turnhost.home_entries WHERE sid = 'f' ORDER BY path");
    const paths = stored.map((row) => row.path);
    expect(paths).to.include.members(['keep', 'proj', '.acp-guest']);
    expect(paths.filter((p) => p === 'gone' || p.startsWith('.cache') || p.includes('node_modules'))).to.deep.equal([]);
    const onB = await killA(n, ['f']);
    await onB.call('session.resume', { session_id: 'f' });
    const listed = await turn(onB, 'f', 'run ls -A "$HOME" "$HOME/proj"');
    expect(listed).to.include('keep').and.to.not.include('gone').and.to.not.include('.cache').and.to.not.include('node_modules');

    // 300 MiB in the home: the turn ends as any other, one warning, and the store has none of it.
    const version = async () => Number((await server().query<{ version: string }>(n.url, "SELECT version FROM turnhost.home_snapshots WHERE sid = 'f'"))[0]!.version);
    const before = await version();
    expect(await turn(onB, 'f', 'run head -c 314572800 /dev/zero > "$HOME/big" && echo written')).to.include('written');
    await turn(onB, 'f', 'run echo again > "$HOME/again"');
    await new Promise((resolve) => setTimeout(resolve, AFTER_TURN_MS));
    const log = readFileSync(join(n.dir, 'home-b', 'logs', 'turnhost.log'), 'utf8');
    expect(log.match(/"name":"home-sync-bound","sid":"f"/g)).to.have.length(1);
    expect(await version(), 'no snapshot past the bound').to.equal(before);
    expect(await server().query(n.url, "SELECT path FROM turnhost.home_entries WHERE sid = 'f' AND path IN ('big', 'again')")).to.deep.equal([]);
  });

  it('a fork made on the other node takes its source\'s memory: its home starts as the snapshot of the source\'s', async () => {
    const n = await nodes({ command: process.execPath, args: [TS_GUEST, '--scene', h.tempDir('turnhost-guests-'), '--fork'] });
    await n.onA.call('session.create', { session_id: 'src' });
    await turn(n.onA, 'src', 'first');
    await turn(n.onA, 'src', 'second');
    await new Promise((resolve) => setTimeout(resolve, AFTER_TURN_MS));
    const onB = await cluster.clientOf(n.b);
    await onB.call('session.fork', { session_id: 'src', new_session_id: 'fork' });
    expect(await turn(onB, 'fork', 'memory')).to.equal('seen: first | second | memory');
  });
});

describe("a guest's home through a PostgreSQL that restarts (AGENT.md §6; real processes, their own PostgreSQL)", function () {
  this.timeout(120_000);
  const h = new Harness();
  // Its own: the run's server serves the other suites while this one is stopped.
  const server = ownPostgresForSuite();
  const cluster = clusterForSuite(h, LEASE_SECS);

  it('a PostgreSQL restart inside a snapshot\'s transaction leaves the earlier snapshot whole, never a half one', async () => {
    const url = await server().database();
    const dir = h.tempDir('turnhost-homes-');
    const config = join(dir, 'agent.json');
    writeFileSync(config, JSON.stringify({ acp: python(h.tempDir('turnhost-guests-')), approval: { default: 'allow' } }));
    const args = [...nodeArgs(url, 'a', LEASE_SECS), '--agent', 'acp', '--agent-config', config];
    const home = join(dir, 'home');
    const first = await startDaemon(h, args, {}, home);
    const client = await cluster.clientOf(first);
    await client.call('session.create', { session_id: 'r' });
    await turn(client, 'r', 'run echo one > "$HOME/one"');
    await new Promise((resolve) => setTimeout(resolve, AFTER_TURN_MS));
    const snapshot = () => server().query<{ path: string; sha256: string | null }>(url, "SELECT path, sha256 FROM turnhost.home_entries WHERE sid = 'r' ORDER BY path");
    const earlier = await snapshot();
    const earlierVersion = await server().query(url, "SELECT version FROM turnhost.home_snapshots WHERE sid = 'r'");
    expect(earlier.map((e) => e.path)).to.include('one');
    for (const pid of [first.process.pid, await hostPid(client)]) process.kill(pid, 'SIGKILL');
    await first.process.waitExit();
    await server().leaseExpired(url, 'r');

    // The next host stops inside its snapshot's transaction; the server restarts under it.
    const second = await startDaemon(h, args, { TURNHOST_STOP_AT: 'home-entries-written' }, home);
    const again = await cluster.clientOf(second);
    await again.call('session.resume', { session_id: 'r' });
    await turn(again, 'r', 'run for i in $(seq 1 200); do echo $i > "$HOME/file-$i"; done; rm "$HOME/one"');
    expect(await stoppedWithin(await hostPid(again), 15_000), 'the host stopped inside its snapshot').to.equal(true);
    await server().pause();
    await server().resume();
    expect(await snapshot(), 'the earlier snapshot, whole').to.deep.equal(earlier);
    expect(await server().query(url, "SELECT version FROM turnhost.home_snapshots WHERE sid = 'r'")).to.deep.equal(earlierVersion);
  });
});
