// Several nodes on one PostgreSQL (PROTOCOL.md §6.2), as far as they are built: sessions owned
// through leases with fencing epochs. Real host processes, each a node, on a real PostgreSQL the
// test starts. A lease's expiry is waited for by reading it from the database, not guessed.
import { expect } from 'chai';
import { connect, type SessionEvent } from '../../client/index.js';
import { startDaemon } from '../helpers/daemon.js';
import { Harness } from '../helpers/processes.js';
import { postgresForSuite } from '../helpers/postgres.js';

const LEASE_SECS = 2;


describe('nodes on one PostgreSQL: leases with fencing (real host processes)', function () {
  this.timeout(60_000);
  const h = new Harness();
  const server = postgresForSuite();
  afterEach(() => h.cleanup());

  const node = (url: string, id: string, home = h.tempDir()) => h.startHost(home, ['--store', url, '--node-id', id, '--lease-secs', String(LEASE_SECS)]);

  it('a session is one node\'s: another refuses it while the lease lives, and takes it over once its node died (kill -9)', async () => {
    const url = await server().database();
    const a = await node(url, 'a');
    const b = await node(url, 'b');
    expect(await a.turn('s1', 'r1', 'one')).to.include({ type: 'turn.end', message_count: 2 });
    a.send({ type: 'turn.start', sid: 's1', request_id: 'r2', text: 'long\n/sleep 30' });
    const running = await a.next('turn.started', { where: (f) => f['request_id'] === 'r2' });
    const refused = await b.turn('s1', 'r3', 'not yours');
    expect(refused).to.include({ type: 'turn.error', reason: 'busy' });
    expect(String(refused['message'])).to.include('owned by node a');
    a.kill('SIGKILL');
    await a.waitExit();
    await server().leaseExpired(url, 's1');
    expect(await b.turn('s1', 'r4', 'two')).to.include({ type: 'turn.end', message_count: 5 });
    expect(await server().query(url, 'SELECT status FROM turns WHERE turn_id = $1', [running['turn_id']])).to.deep.equal([{ status: 'lost' }]);
    const messages = await server().query<{ content: string }>(url, "SELECT content FROM messages WHERE sid = 's1' ORDER BY seq");
    expect(messages.map((m) => m.content)).to.deep.equal(['one', 'one', 'long\n/sleep 30', 'two', 'two']);
    expect(await server().query(url, "SELECT node_id, epoch::int AS epoch FROM leases WHERE sid = 's1'")).to.deep.equal([{ node_id: 'b', epoch: 2 }]);
  });

  it('the queued prompts of a dead node\'s session run on the node that takes it over: once each, in order', async () => {
    const url = await server().database();
    const a = await node(url, 'a');
    const b = await node(url, 'b');
    a.send({ type: 'turn.start', sid: 's1', request_id: 'long', text: 'long\n/sleep 30' });
    await a.next('turn.started', { where: (f) => f['request_id'] === 'long' });
    for (const n of [1, 2, 3]) {
      a.send({ type: 'turn.start', sid: 's1', request_id: `q${n}`, text: `queued ${n}`, on_busy: 'queue', client_message_id: `c${n}` });
      await a.next('turn.queued', { where: (f) => f['request_id'] === `q${n}` });
    }
    a.kill('SIGKILL');
    await a.waitExit();
    await server().leaseExpired(url, 's1');
    b.send({ type: 'queue', sid: 's1', request_id: 'go', op: 'resume' });
    for (const n of [1, 2, 3]) await b.next('turn.end', { where: (f) => f['request_id'] === `q${n}` });
    const users = await server().query<{ content: string }>(url, "SELECT content FROM messages WHERE sid = 's1' AND role = 'user' ORDER BY seq");
    expect(users.map((m) => m.content)).to.deep.equal(['long\n/sleep 30', 'queued 1', 'queued 2', 'queued 3']);
    expect(await server().query(url, "SELECT status, count(*)::int AS n FROM turns WHERE sid = 's1' GROUP BY status ORDER BY status")).to.deep.equal([
      { status: 'completed', n: 3 },
      { status: 'lost', n: 1 },
    ]);
  });

  it('a node paused past its lease writes nothing of the session when it wakes: its turn ends lease_lost; its other sessions go on', async () => {
    const url = await server().database();
    const a = await node(url, 'a');
    const b = await node(url, 'b');
    expect(await a.turn('s2', 'other', 'elsewhere')).to.include({ type: 'turn.end' });
    a.send({ type: 'turn.start', sid: 's1', request_id: 'paused', text: 'paused reply\n/sleep 1' });
    await a.next('turn.started', { where: (f) => f['request_id'] === 'paused' });
    a.kill('SIGSTOP');
    await server().leaseExpired(url, 's1');
    expect(await b.turn('s1', 'taken', 'the new owner')).to.include({ type: 'turn.end', message_count: 3 });
    a.kill('SIGCONT');
    const woke = await a.ended('paused');
    expect(woke).to.include({ type: 'turn.error', reason: 'lease_lost' });
    expect(await a.turn('s2', 'still', 'still mine')).to.include({ type: 'turn.end', message_count: 4 });
    const s1 = await server().query<{ role: string; content: string }>(url, "SELECT role, content FROM messages WHERE sid = 's1' ORDER BY seq");
    expect(s1.map((m) => `${m.role}: ${m.content}`)).to.deep.equal(['user: paused reply\n/sleep 1', 'user: the new owner', 'assistant: the new owner']);
    const again = await a.turn('s1', 'back', 'may I?');
    expect(again).to.include({ type: 'turn.error', reason: 'busy' });
    expect(String(again['message'])).to.include('owned by node b');
  });

  it('a frame naming a session that does not exist leaves no lease behind', async () => {
    const url = await server().database();
    const a = await node(url, 'a');
    a.send({ type: 'interrupt', sid: 'ghost', request_id: 'i1' });
    expect(await a.next('interrupt.ack')).to.include({ applied: false });
    expect(await server().query(url, "SELECT count(*)::int AS n FROM leases WHERE sid = 'ghost'")).to.deep.equal([{ n: 0 }]);
  });

  it('a turn.start refused because another node owns the session gives its worker back', async () => {
    const url = await server().database();
    const a = await node(url, 'a');
    const b = await h.startHost(h.tempDir(), ['--store', url, '--node-id', 'b', '--workers', '1']);
    expect(await a.turn('s1', 'r1', 'mine')).to.include({ type: 'turn.end' });
    for (const n of [1, 2, 3]) expect(await b.turn('s1', `refused-${n}`, 'not yours')).to.include({ type: 'turn.error', reason: 'busy' });
    expect(await b.turn('s2', 'r2', 'one worker, still free')).to.include({ type: 'turn.end' });
  });

  it('a node that restarts gets its sessions back only once their leases expire, never by assuming', async () => {
    const url = await server().database();
    const home = h.tempDir();
    const first = await node(url, 'a', home);
    expect(await first.turn('s1', 'r1', 'one')).to.include({ type: 'turn.end' });
    first.kill('SIGKILL');
    await first.waitExit();
    const second = await node(url, 'a', home);
    const early = await second.turn('s1', 'r2', 'too soon');
    expect(early).to.include({ type: 'turn.error', reason: 'busy' });
    await server().leaseExpired(url, 's1');
    expect(await second.turn('s1', 'r3', 'now')).to.include({ type: 'turn.end', message_count: 4 });
  });

  it('status and the REPL show this node and every node of the cluster: URL, heartbeat age, sessions', async () => {
    const url = await server().database();
    const daemon = await startDaemon(h, ['--store', url, '--node-id', 'a', '--lease-secs', String(LEASE_SECS), '--advertise', 'http://a.example:7433']);
    await node(url, 'b');
    const result = await h.runCli(['status', '--home', daemon.home, '--json']);
    const status = JSON.parse(result.stdout) as { cluster: { node_id: string; nodes: { node_id: string; url: string | null; heartbeat_age_ms: number; sessions: number }[] } };
    expect(status.cluster.node_id).to.equal('a');
    expect(status.cluster.nodes.map((n) => [n.node_id, n.url])).to.deep.equal([
      ['a', 'http://a.example:7433'],
      ['b', null],
    ]);
    for (const n of status.cluster.nodes) expect(n.heartbeat_age_ms, n.node_id).to.be.within(0, LEASE_SECS * 1000);
    const table = await h.runCli(['status', '--home', daemon.home]);
    expect(table.stdout).to.match(/node b\s+\(no url\), heartbeat \d+ ms ago, 0 session\(s\)/);
    const repl = h.spawnCli(['repl', '--home', daemon.home]);
    let out = '';
    repl.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    repl.stdin!.end('.nodes\n');
    await new Promise((resolve) => repl.once('close', resolve));
    expect(out).to.match(/a\s+http:\/\/a\.example:7433\s+\d+ ms ago/);
    expect(out).to.match(/\bb\s+\d+ ms ago\s+0/);
  });

  it('a whole node killed (daemon and host): turnhost/client moves to the next node and the session goes on there', async () => {
    const url = await server().database();
    const token = 'cluster-test-token-0123456789abcdef';
    const nodeArgs = (id: string) => ['--store', url, '--node-id', id, '--lease-secs', String(LEASE_SECS), '--listen', '127.0.0.1:0'];
    const a = await startDaemon(h, nodeArgs('a'), { TURNHOST_TOKEN: token });
    const b = await startDaemon(h, nodeArgs('b'), { TURNHOST_TOKEN: token });
    const statusOf = async (home: string) => JSON.parse((await h.runCli(['status', '--home', home, '--json'])).stdout) as { http: { url: string }; host: { pid: number } };
    const [aStatus, bStatus] = [await statusOf(a.home), await statusOf(b.home)];
    const client = await connect({ urls: [aStatus.http.url, bStatus.http.url], token });
    try {
      await client.createSession({ session_id: 's1' });
      // Each pass follows the session anew (leaving a for-await ends the iterator it read), before its submit.
      const untilEnd = async (events: AsyncIterable<SessionEvent>): Promise<SessionEvent[]> => {
        const seen: SessionEvent[] = [];
        for await (const event of events) {
          seen.push(event);
          if (event.type === 'turn.end') return seen;
        }
        return seen;
      };
      const first = client.events('s1');
      expect((await client.submit('s1', 'on a')).status).to.equal('streaming');
      await untilEnd(first);
      const movedOn = new Promise<void>((resolve) => {
        client.onConnectionState = (state) => state === 'connected' && resolve();
      });
      for (const pid of [a.process.pid, aStatus.host.pid]) process.kill(pid, 'SIGKILL');
      await movedOn;
      await server().leaseExpired(url, 's1');
      const following = client.events('s1');
      await client.submit('s1', 'on b');
      const after = await untilEnd(following);
      expect(after.filter((e) => e.type === 'message.complete').map((e) => (e.payload as { text: string }).text)).to.deep.equal(['on b']);
      const messages = await server().query<{ content: string }>(url, "SELECT content FROM messages WHERE sid = 's1' ORDER BY seq");
      expect(messages.map((m) => m.content)).to.deep.equal(['on a', 'on a', 'on b', 'on b']);
      expect(await server().query(url, "SELECT node_id FROM leases WHERE sid = 's1'")).to.deep.equal([{ node_id: 'b' }]);
    } finally {
      client.close();
    }
  });

  it('one node id runs once, and a single host and nodes refuse each other, in one line each', async () => {
    const url = await server().database();
    await node(url, 'a');
    const twice = await h.runCli(['host', '--home', h.tempDir(), '--store', url, '--node-id', 'a']);
    expect(twice.code).to.equal(1);
    expect(twice.stderr).to.match(/node a is already running/);
    const single = await h.runCli(['host', '--home', h.tempDir(), '--store', url]);
    expect(single.code).to.equal(1);
    expect(single.stderr).to.match(/another compute host is using the database/);
    const sqlite = await h.runCli(['host', '--home', h.tempDir(), '--node-id', 'x']);
    expect(sqlite.code).to.equal(1);
    expect(sqlite.stderr).to.match(/--node-id needs a PostgreSQL store/);
  });
});
