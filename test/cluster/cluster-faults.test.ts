// The faults a cluster must survive (PROTOCOL.md §6.2, docs/CLUSTER.md): a node that dies with a
// session a client follows elsewhere, turns started on two nodes at the same moments, a restart
// of PostgreSQL, and a node started again while a dead connection still holds its lock. Real
// daemons and hosts on a real PostgreSQL: the run's, and for the restarts one of their own.
import { expect } from 'chai';
import { nodeLockWaitMs } from '../../persistence/store.js';
import { clusterForSuite, nodeArgs } from '../helpers/cluster.js';
import { hostPid, startDaemon } from '../helpers/daemon.js';
import { Harness } from '../helpers/processes.js';
import { ownPostgresForSuite, postgresForSuite } from '../helpers/postgres.js';

const LEASE_SECS = 2;

describe('nodes on one PostgreSQL: the faults they survive (real processes)', function () {
  this.timeout(90_000);
  const h = new Harness();
  const server = postgresForSuite();
  const { daemons, clientOf } = clusterForSuite(h, LEASE_SECS);

  it('a dead node\'s session that a client follows on another node is taken over when its lease expires, with no further call: node_lost, its question withdrawn, then the queue', async () => {
    const url = await server().database();
    const [a, b] = await daemons(url, ['a', 'b']);
    const onA = await clientOf(a);
    await onA.call('session.create', { session_id: 's2' });
    const long = await onA.call<{ turn_id: string }>('prompt.submit', { session_id: 's2', text: 'long\n/ask colour?' });
    await onA.until(() => onA.requests.length === 1, 'the question');
    const question = onA.requests[0]!.id;
    const queued: string[] = [];
    for (const n of [1, 2]) {
      const answer = await onA.call<{ status: string; queue_id: string }>('prompt.submit', { session_id: 's2', text: `queued ${n}`, on_busy: 'queue', client_message_id: `c${n}` });
      expect(answer.status).to.equal('queued');
      queued.push(answer.queue_id);
    }
    for (const pid of [a.process.pid, await hostPid(onA)]) process.kill(pid, 'SIGKILL');
    await a.process.waitExit();

    const onB = await clientOf(b);
    const resumed = await onB.call<Record<string, unknown>>('session.resume', { session_id: 's2' });
    expect(resumed).to.deep.include({ running: true, owner: { node_id: 'a', reachable: false } });
    const lost = await onB.nextEvent('turn.error', 's2');
    expect(lost.payload).to.include({ turn_id: long.turn_id, reason: 'node_lost' });
    expect((await onB.nextEvent('request.cancel', 's2')).payload).to.include({ id: question, reason: 'node_lost' });
    for (const queueId of queued) await onB.nextEvent('turn.end', 's2', (e) => e.payload['queue_id'] === queueId);
    const ends = onB.events.filter((e) => e.session_id === 's2' && (e.type === 'turn.end' || e.type === 'turn.error'));
    expect(ends.map((e) => [e.type, e.payload['queue_id'] ?? null])).to.deep.equal([['turn.error', null], ...queued.map((id) => ['turn.end', id])]);

    const users = await server().query<{ content: string }>(url, "SELECT content FROM messages WHERE sid = 's2' AND role = 'user' ORDER BY seq");
    expect(users.map((m) => m.content)).to.deep.equal(['long\n/ask colour?', 'queued 1', 'queued 2']);
    expect(await server().query(url, 'SELECT status, reason FROM server_requests WHERE id = $1', [question])).to.deep.equal([{ status: 'expired', reason: 'node lost' }]);
    expect(await server().query(url, "SELECT status, count(*)::int AS n FROM turns WHERE sid = 's2' GROUP BY status ORDER BY status")).to.deep.equal([
      { status: 'completed', n: 2 },
      { status: 'lost', n: 1 },
    ]);
  });

  it('a queue that a dead node left with no turn running (its head had failed to start) runs on the node that takes the session, in order', async () => {
    const url = await server().database();
    const a = await h.startHost(h.tempDir(), nodeArgs(url, 'a', LEASE_SECS));
    expect(await a.turn('s', 'r1', 'one')).to.include({ type: 'turn.end' });
    // What a queue whose head could not start leaves in the store: a queued prompt, and no turn running.
    await server().query(url, "INSERT INTO queue (queue_id, sid, position, text, client_message_id, request_id, turn_id, steered, queued_at) VALUES ('q-left', 's', 5, 'left behind', NULL, 'rq', 'turn-left', 0, 1)");
    a.kill('SIGKILL');
    await a.waitExit();
    await server().leaseExpired(url, 's');
    const b = await h.startHost(h.tempDir(), nodeArgs(url, 'b', LEASE_SECS));
    b.send({ type: 'turn.start', sid: 's', request_id: 'r2', text: 'two', on_busy: 'queue' });
    expect(await b.next('turn.started', { where: (f) => f['turn_id'] === 'turn-left' })).to.include({ request_id: 'rq' });
    expect(await b.ended('r2')).to.include({ type: 'turn.end' });
    const users = await server().query<{ content: string }>(url, "SELECT content FROM messages WHERE sid = 's' AND role = 'user' ORDER BY seq");
    expect(users.map((m) => m.content)).to.deep.equal(['one', 'left behind', 'two']);
  });

  it('turn ids are unique across nodes: two nodes starting turns at the same moments never collide', async () => {
    const url = await server().database();
    const [a, b] = await daemons(url, ['a', 'b']);
    const pair = [await clientOf(a), await clientOf(b)];
    const PER_NODE = 100;
    // Each node's n-th submit leaves within the same milliseconds as the other's.
    const answers = await Promise.all(
      pair.flatMap((client, node) => Array.from({ length: PER_NODE }, (_, k) => client.call<{ status: string; turn_id: string }>('prompt.submit', { session_id: `n${node}-s${k}`, text: 'hello' }))),
    );
    expect(answers.every((answer) => answer.status === 'streaming')).to.equal(true);
    expect(new Set(answers.map((answer) => answer.turn_id)).size).to.equal(2 * PER_NODE);
    for (const [node, client] of pair.entries()) {
      await client.until(() => client.events.filter((e) => e.type === 'turn.end').length === PER_NODE, `node ${node}'s turn ends`, 30_000);
    }
    expect(await server().query(url, "SELECT count(*)::int AS n FROM turns WHERE status = 'completed'")).to.deep.equal([{ n: 2 * PER_NODE }]);
  });

  it('a node killed with -9 starts again in its own home at once, even while a dead connection still holds its lock', async () => {
    const url = await server().database();
    const home = h.tempDir();
    const first = await h.startHost(home, nodeArgs(url, 'a', LEASE_SECS));
    expect(await first.turn('s1', 'r1', 'one')).to.include({ type: 'turn.end' });
    first.kill('SIGKILL');
    await first.waitExit();
    // What the server keeps of a client it still believes in (one gone behind a dead network, or
    // left idle in a transaction): a connection holding the node's lock.
    const stale = await server().connect(url);
    await stale.query('BEGIN');
    await stale.query("SELECT pg_advisory_lock(hashtext('turnhost node ' || 'a')::bigint)");

    const started = Date.now();
    const second = await h.startHost(home, nodeArgs(url, 'a', LEASE_SECS));
    expect(Date.now() - started).to.be.below(nodeLockWaitMs(LEASE_SECS));
    const held = await stale.query('SELECT 1').then(
      () => 'still connected',
      (err: Error) => err.message,
    );
    expect(held).to.match(/terminat|not queryable/);
    await server().leaseExpired(url, 's1');
    expect(await second.turn('s1', 'r2', 'two')).to.include({ type: 'turn.end', message_count: 4 });
  });
});

describe('nodes on one PostgreSQL that restarts under them (real processes, their own PostgreSQL)', function () {
  this.timeout(90_000);
  const h = new Harness();
  // Its own: the run's server serves the other suites while this one is stopped.
  const server = ownPostgresForSuite();
  const { clientOf } = clusterForSuite(h, LEASE_SECS);

  it('a PostgreSQL restart: every node writes again within lease + 5 s, restarting nothing, and leaves no connection idle in a transaction', async () => {
    const url = await server().database();
    const beat = { TURNHOST_HEARTBEAT_SECS: '1' };
    const nodes = [await h.startHost(h.tempDir(), nodeArgs(url, 'a', LEASE_SECS), beat), await h.startHost(h.tempDir(), nodeArgs(url, 'b', LEASE_SECS), beat)];
    for (const [i, node] of nodes.entries()) expect(await node.turn(`s${i}`, 'before', 'one')).to.include({ type: 'turn.end' });

    await server().pause();
    try {
      for (const [i, node] of nodes.entries()) {
        expect(await node.turn(`s${i}`, 'down', 'while it is down')).to.include({ type: 'turn.error', reason: 'storage' });
        const mark = node.frames.length;
        await node.next('hb', { where: (f) => node.frames.indexOf(f) >= mark && typeof f['store_problem'] === 'string' });
      }
    } finally {
      await server().resume();
    }
    const back = Date.now();
    const boundMs = (LEASE_SECS + 5) * 1000;
    for (const node of nodes) {
      const mark = node.frames.length;
      await node.next('hb', { where: (f) => node.frames.indexOf(f) >= mark && f['store_problem'] === undefined, timeoutMs: boundMs });
    }
    expect(Date.now() - back).to.be.below(boundMs);
    for (const [i, node] of nodes.entries()) expect(await node.turn(`s${i}`, 'after', 'two')).to.include({ type: 'turn.end' });
    for (const node of nodes) expect(node.child.exitCode).to.equal(null);
    const stuck = await server().query(url, "SELECT count(*)::int AS n FROM pg_stat_activity WHERE state LIKE 'idle in transaction%'");
    expect(stuck).to.deep.equal([{ n: 0 }]);
  });

  it('status says the store is reachable only while this node can write it, and again once it can', async () => {
    const url = await server().database();
    const client = await clientOf(await startDaemon(h, nodeArgs(url, 'a', LEASE_SECS), { TURNHOST_HEARTBEAT_SECS: '1' }));
    const store = async () => (await client.call<{ store: { reachable: boolean; problem?: string } }>('host.status')).store;
    expect(await store()).to.deep.equal({ url: url.replace(/:[^:@/]+@/, ':***@'), reachable: true });
    // Status has no event to await: it is read until it changes, within a bound (three heartbeats; then lease + 5 s).
    const until = async (reachable: boolean, boundMs: number): Promise<{ reachable: boolean; problem?: string }> => {
      const deadline = Date.now() + boundMs;
      for (;;) {
        const now = await store();
        if (now.reachable === reachable || Date.now() > deadline) return now;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    };
    await server().pause();
    let down: { reachable: boolean; problem?: string };
    try {
      down = await until(false, 3_000);
    } finally {
      await server().resume();
    }
    expect(down.reachable).to.equal(false);
    expect(down.problem).to.be.a('string');
    expect((await until(true, (LEASE_SECS + 5) * 1000)).reachable).to.equal(true);
    expect(await client.call('prompt.submit', { session_id: 's1', text: 'written' })).to.include({ status: 'streaming' });
  });
});
