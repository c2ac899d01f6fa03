// People on several nodes (PROTOCOL.md §5.6, §6.2): a user made on one node is known on every
// other (the store holds the users), a request another node carries out keeps its person (the
// forwarding node vouches for it over its link, and the owner node applies the same rules), and a
// removal closes the user's connections on every node.
import { expect } from 'chai';
import { WebSocket } from 'ws';
import { connect, TurnhostError, type TurnhostClient } from '../../client/index.js';
import { edgeUrl, nodeArgs } from '../helpers/cluster.js';
import { startDaemon } from '../helpers/daemon.js';
import { Harness } from '../helpers/processes.js';
import { postgresForSuite } from '../helpers/postgres.js';

const LEASE_SECS = 2;

describe('people on several nodes (real processes, one PostgreSQL)', function () {
  this.timeout(90_000);
  const h = new Harness();
  const server = postgresForSuite();
  const clients: TurnhostClient[] = [];
  afterEach(async () => {
    for (const client of clients.splice(0)) client.close();
    await h.cleanup();
  });

  it('a user made on node a is known on node b; their prompt forwarded from b to the owner a is theirs, and b refuses what a would; a removal on a closes their WebSocket on b', async () => {
    const url = await server().database();
    const a = await startDaemon(h, [...nodeArgs(url, 'a', LEASE_SECS), '--listen', '127.0.0.1:0']);
    const b = await startDaemon(h, [...nodeArgs(url, 'b', LEASE_SECS), '--listen', '127.0.0.1:0']);
    const add = async (name: string) => (await h.runCli(['user', 'add', name, '--home', a.home, '--store', url])).stdout.trim();
    const [alice, bob] = [await add('alice'), await add('bob')];
    const [urlA, urlB] = [await edgeUrl(a), await edgeUrl(b)];

    const aliceOnA = await connect({ url: urlA, token: alice });
    clients.push(aliceOnA);
    await aliceOnA.createSession({ session_id: 'hers' });
    for await (const _ of aliceOnA.turn('hers', 'on a')) void _;

    // Node b did not make alice; the store tells it who she is. Her session's lease is a's: b forwards.
    const aliceOnB = await connect({ url: urlB, token: alice });
    clients.push(aliceOnB);
    expect((await aliceOnB.hostStatus()).you).to.deep.equal({ user: 'alice', admin: false });
    for await (const _ of aliceOnB.turn('hers', 'through b')) void _;
    const prompts = (await aliceOnA.history('hers')).messages.filter((m) => m.role === 'user');
    expect(prompts.map((m) => [m.content, m.by])).to.deep.equal([
      ['on a', 'alice'],
      ['through b', 'alice'],
    ]);

    const bobOnB = await connect({ url: urlB, token: bob });
    clients.push(bobOnB);
    const refused = await bobOnB.submit('hers', 'not yours').then(
      () => 0,
      (err: unknown) => (err instanceof TurnhostError ? err.code : -1),
    );
    expect(refused, "bob on b, alice's session owned by a").to.equal(4004);
    await aliceOnA.shareSession('hers', 'bob', 'viewer');
    const asViewer = await bobOnB.submit('hers', 'still not yours').then(
      () => 0,
      (err: unknown) => (err instanceof TurnhostError ? err.code : -1),
    );
    expect(asViewer, 'a viewer, through b').to.equal(4003);

    const ws = new WebSocket(`${urlB.replace('http', 'ws')}/v1/rpc`, { headers: { authorization: `Bearer ${bob}` } });
    const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
    await new Promise((resolve) => ws.once('open', resolve));
    const removed = await h.runCli(['user', 'remove', 'bob', '--home', a.home, '--store', url]);
    expect(removed.code, removed.stderr).to.equal(0);
    const began = performance.now();
    expect(await closed).to.equal(1008);
    expect(performance.now() - began, 'ms from the removal on a to the close on b').to.be.below(2_000);
  });

  it("a budget holds across nodes (PROTOCOL.md §5.7): alice's turn on node a counts when she starts one on node b", async () => {
    const url = await server().database();
    const a = await startDaemon(h, [...nodeArgs(url, 'a', LEASE_SECS), '--listen', '127.0.0.1:0']);
    const b = await startDaemon(h, [...nodeArgs(url, 'b', LEASE_SECS), '--listen', '127.0.0.1:0']);
    const alice = (await h.runCli(['user', 'add', 'alice', '--home', a.home, '--store', url])).stdout.trim();
    const budget = await h.runCli(['user', 'budget', 'alice', '--turns-per-day', '1', '--home', b.home, '--store', url]);
    expect(budget.code, budget.stderr).to.equal(0);
    const onA = await connect({ url: await edgeUrl(a), token: alice });
    const onB = await connect({ url: await edgeUrl(b), token: alice });
    clients.push(onA, onB);
    await onA.createSession({ session_id: 'on-a' });
    for await (const _ of onA.turn('on-a', 'the one turn')) void _;
    await onB.createSession({ session_id: 'on-b' });
    const refused = await onB.submit('on-b', 'a second, on b').then(
      () => 0,
      (err: unknown) => (err instanceof TurnhostError ? err.code : -1),
    );
    expect(refused).to.equal(4029);
    const usage = await onB.usage();
    expect(usage.rows.map((r) => [r.key, r.turns])).to.deep.equal([['alice', 1]]);
  });
});
