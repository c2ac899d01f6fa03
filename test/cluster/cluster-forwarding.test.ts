// Any node answers (PROTOCOL.md §6.2): three nodes (three homes, three daemons with their edges on
// 127.0.0.1) on one PostgreSQL the test starts. A client of one node names a session another node
// owns and is served by the owner through its own node; the nodes show each other the cluster
// secret, which never appears in a log or an output.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { Harness } from '../helpers/processes.js';
import { postgresForSuite } from '../helpers/postgres.js';
import { clusterForSuite } from '../helpers/cluster.js';

const LEASE_SECS = 2;

describe('nodes on one PostgreSQL: any node answers (three real daemons)', function () {
  this.timeout(90_000);
  const h = new Harness();
  const server = postgresForSuite();
  const { daemons: nodes, clientOf } = clusterForSuite(h, LEASE_SECS);

  it('a client of node b is served by the owner a through b: events with a\'s seq, a clarify answered on b, an interrupt on b', async () => {
    const url = await server().database();
    const [a, b] = await nodes(url, ['a', 'b']);
    const onA = await clientOf(a);
    const onB = await clientOf(b);
    await onA.call('session.create', { session_id: 's1' });
    expect(await onA.call('prompt.submit', { session_id: 's1', text: 'first' })).to.include({ status: 'streaming' });
    await onA.nextEvent('turn.end', 's1');

    const resumed = await onB.call<{ last_seq: number; status: string }>('session.resume', { session_id: 's1', after_seq: 0 });
    expect(resumed.status).to.equal('active');
    const seenOnA = onA.events.filter((e) => e.session_id === 's1').map((e) => [e.seq, e.type]);
    await onB.until(() => onB.events.length >= seenOnA.length, 'the replay');
    expect(onB.events.map((e) => [e.seq, e.type])).to.deep.equal(seenOnA);

    const asked = await onB.call<{ status: string; turn_id: string }>('prompt.submit', { session_id: 's1', text: 'asking\n/ask colour?' });
    expect(asked.status).to.equal('streaming');
    await onB.until(() => onB.requests.length === 1, 'the clarify request');
    const request = onB.requests[0]!;
    expect(request.method).to.equal('clarify.request');
    onB.rpc.respond(request.id, { result: { answer: 'blue' } });
    const end = await onB.nextEvent('turn.end', 's1', (e) => e.payload['turn_id'] === asked.turn_id);
    expect(onB.reply('s1')).to.include('answer: blue');
    // The same numbering on both nodes: a's.
    const endOnA = await onA.nextEvent('turn.end', 's1', (e) => e.payload['turn_id'] === asked.turn_id);
    expect(end.seq).to.equal(endOnA.seq);

    const long = await onB.call<{ turn_id: string }>('prompt.submit', { session_id: 's1', text: 'long\n/sleep 30' });
    await onB.nextEvent('turn.started', 's1', (e) => e.payload['turn_id'] === long.turn_id);
    expect(await onB.call('session.interrupt', { session_id: 's1', turn_id: long.turn_id })).to.include({ applied: true });
    const stopped = await onA.nextEvent('turn.end', 's1', (e) => e.payload['turn_id'] === long.turn_id);
    expect(stopped.payload).to.include({ interrupted: true });

    const turns = await server().query<{ status: string; boot: string }>(url, "SELECT t.status, b.node_id AS boot FROM turns t JOIN boots b USING (boot_id) WHERE t.sid = 's1' ORDER BY t.started_at");
    expect(turns).to.deep.equal([
      { status: 'completed', boot: 'a' },
      { status: 'completed', boot: 'a' },
      { status: 'interrupted', boot: 'a' },
    ]);
    expect(await server().query(url, "SELECT node_id FROM leases WHERE sid = 's1'")).to.deep.equal([{ node_id: 'a' }]);
  });

  it('concurrent submits to one session through three nodes: one running turn at a time, one queue, each client\'s prompts in its order', async () => {
    const url = await server().database();
    const daemons = await nodes(url, ['a', 'b', 'c']);
    const [onA, onB, onC] = await Promise.all(daemons.map(clientOf));
    // The session is new: the three hosts race for its lease, and the two that lose send their submits on to the winner.
    const PER_NODE = 5;
    const submits = [onA!, onB!, onC!].flatMap((client, n) =>
      Array.from({ length: PER_NODE }, (_, i) => client.call<{ status: string; turn_id: string }>('prompt.submit', { session_id: 's1', text: `${'abc'[n]}${i}\n/sleep 0.05`, client_message_id: `${'abc'[n]}-${i}` })),
    );
    const answers = await Promise.all(submits);
    expect(answers.map((answer) => answer.status).filter((status) => status !== 'streaming' && status !== 'queued')).to.deep.equal([]);
    // Each client follows the session from its submit on, wherever the session's owner is: it sees its own turns end.
    await Promise.all(
      [onA!, onB!, onC!].map((client, n) =>
        Promise.all(answers.slice(n * PER_NODE, (n + 1) * PER_NODE).map((answer) => client.nextEvent('turn.end', 's1', (e) => e.payload['turn_id'] === answer.turn_id))),
      ),
    );
    // One turn at a time: each ends before the next starts.
    const turns = await server().query<{ started_at: string; ended_at: string; status: string }>(url, "SELECT started_at::text, ended_at::text, status FROM turns WHERE sid = 's1' ORDER BY started_at");
    expect(turns.map((t) => t.status)).to.deep.equal(Array(3 * PER_NODE).fill('completed'));
    for (let i = 1; i < turns.length; i++) expect(Number(turns[i]!.started_at)).to.be.at.least(Number(turns[i - 1]!.ended_at));
    const prompts = await server().query<{ content: string }>(url, "SELECT content FROM messages WHERE sid = 's1' AND role = 'user' ORDER BY seq");
    const ran = prompts.map((p) => p.content.split('\n')[0]!);
    expect(ran).to.have.length(3 * PER_NODE);
    for (const node of 'abc') {
      const own = ran.filter((prompt) => prompt.startsWith(node));
      expect(own, node).to.deep.equal(Array.from({ length: PER_NODE }, (_, i) => `${node}${i}`));
    }
    const ranOn = await server().query<{ node_id: string }>(url, "SELECT DISTINCT b.node_id FROM turns t JOIN boots b USING (boot_id) WHERE t.sid = 's1'");
    expect(ranOn).to.have.length(1);
    expect(await server().query(url, "SELECT node_id FROM leases WHERE sid = 's1'")).to.deep.equal(ranOn);
  });

  it('a node killed with its sessions: a client of another node gets a clear error, then node_lost by itself, and the session goes on there once the lease expires', async () => {
    const url = await server().database();
    const [a, b] = await nodes(url, ['a', 'b']);
    const onA = await clientOf(a);
    const onB = await clientOf(b);
    await onA.call('session.create', { session_id: 's1' });
    const long = await onB.call<{ turn_id: string }>('prompt.submit', { session_id: 's1', text: 'long\n/sleep 30' });
    await onB.nextEvent('turn.started', 's1');
    const aHost = (await onA.call<{ host: { pid: number } }>('host.status')).host.pid;
    for (const pid of [a.process.pid, aHost]) process.kill(pid, 'SIGKILL');
    await a.process.waitExit();
    let refused: unknown = null;
    await onB.call('prompt.submit', { session_id: 's1', text: 'too soon' }).catch((err: unknown) => (refused = err));
    expect(refused).to.include({ code: 5019 });
    expect(String((refused as Error).message)).to.match(/node a, which owns the session, cannot be reached/);
    // The client followed s1 over b's link to a: b takes it over when the lease expires, with no further call.
    const lost = await onB.nextEvent('turn.error', 's1', (e) => e.payload['turn_id'] === long.turn_id);
    expect(lost.payload['reason']).to.equal('node_lost');
    await server().leaseExpired(url, 's1');
    const taken = await onB.call<{ turn_id: string }>('prompt.submit', { session_id: 's1', text: 'on b' });
    await onB.nextEvent('turn.end', 's1', (e) => e.payload['turn_id'] === taken.turn_id);
    expect(await server().query(url, 'SELECT status FROM turns WHERE turn_id = $1', [long.turn_id])).to.deep.equal([{ status: 'lost' }]);
    expect(await server().query(url, "SELECT node_id FROM leases WHERE sid = 's1'")).to.deep.equal([{ node_id: 'b' }]);
  });

  it('a node paused past its lease (daemon and host stopped): the session goes on at another node, served through the third; the paused one writes nothing when it wakes and its client sees lease_lost', async () => {
    const url = await server().database();
    const [a, b, c] = await nodes(url, ['a', 'b', 'c']);
    const [onA, onB, onC] = await Promise.all([a!, b!, c!].map(clientOf));
    await onA!.call('session.create', { session_id: 's1' });
    const paused = await onA!.call<{ turn_id: string }>('prompt.submit', { session_id: 's1', text: 'before the pause\n/sleep 1' });
    await onA!.nextEvent('turn.started', 's1');
    const aHost = (await onA!.call<{ host: { pid: number } }>('host.status')).host.pid;
    for (const pid of [a!.process.pid, aHost]) process.kill(pid, 'SIGSTOP');
    try {
      await server().leaseExpired(url, 's1');
      const taken = await onC!.call<{ turn_id: string }>('prompt.submit', { session_id: 's1', text: 'on c' });
      await onC!.nextEvent('turn.end', 's1', (e) => e.payload['turn_id'] === taken.turn_id);
      const through = await onB!.call<{ turn_id: string }>('prompt.submit', { session_id: 's1', text: 'through b' });
      await onB!.nextEvent('turn.end', 's1', (e) => e.payload['turn_id'] === through.turn_id);
    } finally {
      for (const pid of [a!.process.pid, aHost]) process.kill(pid, 'SIGCONT');
    }
    const woke = await onA!.nextEvent('turn.error', 's1', (e) => e.payload['turn_id'] === paused.turn_id);
    expect(woke.payload).to.include({ reason: 'lease_lost' });
    const messages = await server().query<{ role: string; content: string }>(url, "SELECT role, content FROM messages WHERE sid = 's1' ORDER BY seq");
    expect(messages.map((m) => `${m.role}: ${m.content}`)).to.deep.equal(['user: before the pause\n/sleep 1', 'user: on c', 'assistant: on c', 'user: through b', 'assistant: through b']);
    expect(await server().query(url, "SELECT node_id FROM leases WHERE sid = 's1'")).to.deep.equal([{ node_id: 'c' }]);
    expect(await server().query(url, 'SELECT status FROM turns WHERE turn_id = $1', [paused.turn_id])).to.deep.equal([{ status: 'lost' }]);
  });

  it('the cluster secret never appears in a log, an output, status or the edge\'s answers', async () => {
    const url = await server().database();
    const daemons = await nodes(url, ['a', 'b']);
    const onB = await clientOf(daemons[1]!);
    await (await clientOf(daemons[0]!)).call('session.create', { session_id: 's1' });
    const forwarded = await onB.call<{ turn_id: string }>('prompt.submit', { session_id: 's1', text: 'through b' });
    await onB.nextEvent('turn.end', 's1', (e) => e.payload['turn_id'] === forwarded.turn_id);
    const [{ secret }] = (await server().query<{ secret: string }>(url, 'SELECT secret FROM cluster_secret')) as [{ secret: string }];
    expect(secret).to.match(/^[0-9a-f]{64}$/);
    const outputs = [
      ...(await Promise.all(daemons.map((d) => h.runCli(['status', '--home', d.home, '--json'])))).map((r) => r.stdout + r.stderr),
      ...daemons.map((d) => readFileSync(join(d.home, 'logs', 'turnhost.log'), 'utf8')),
      ...daemons.map((d) => d.process.stderr),
    ];
    for (const text of outputs) expect(text).not.to.include(secret);
    // The secret opens a peer's link, not the REST routes or the page.
    const status = JSON.parse((await h.runCli(['status', '--home', daemons[0]!.home, '--json'])).stdout) as { http: { url: string } };
    const rest = await fetch(`${status.http.url}/v1/sessions`, { headers: { authorization: `Bearer ${secret}` } });
    expect(rest.status).to.equal(401);
  });
});
