// Branches on several nodes (PROTOCOL.md §2.2, §6.2): two daemons on one PostgreSQL the test
// starts. A fork made on node b belongs to b (its lease, its turns) while its source stays a's; a
// rewind, a retry and an edit asked of b are forwarded to the owner a, which supersedes and never
// deletes; the fork's own line is untouched by its source's rewind. The agent says what history it
// was given, so each check is of what the agent saw, not only of what the store holds.
import { expect } from 'chai';
import { Harness } from '../helpers/processes.js';
import { postgresForSuite } from '../helpers/postgres.js';
import { clusterForSuite } from '../helpers/cluster.js';
import { endedTurn, historyOf, type TestClient } from '../helpers/daemon.js';

const LEASE_SECS = 2;
const HISTORY_AGENT = ['--agent', 'test/fixtures/history-agent.mjs'];

describe('branches on several nodes (real daemons, one PostgreSQL)', function () {
  this.timeout(90_000);
  const h = new Harness();
  const server = postgresForSuite();
  const { daemons, clientOf } = clusterForSuite(h, LEASE_SECS);

  const turn = endedTurn;
  async function lines(client: TestClient, sid: string, all = false): Promise<string[]> {
    return (await historyOf(client, sid, all)).map((m) => `${m.superseded ? '~' : ''}${m.role}: ${m.content}`);
  }
  async function owner(url: string, sid: string): Promise<string[]> {
    return (await server().query<{ node_id: string }>(url, `SELECT node_id FROM leases WHERE sid = '${sid}'`)).map((r) => r.node_id);
  }

  it('a fork made on b is b\'s; a rewind, a retry and an edit asked of b are carried out by the owner a; the fork keeps its line', async () => {
    const url = await server().database();
    const [a, b] = await daemons(url, ['a', 'b'], HISTORY_AGENT);
    const onA = await clientOf(a);
    const onB = await clientOf(b);
    await onA.call('session.create', { session_id: 's1' });
    const first = await turn(onA, 's1', 'one');
    await turn(onA, 's1', 'two');

    const forked = await onB.call<{ session_id: string; forked_from: unknown }>('session.fork', { session_id: 's1', at_turn_id: first, new_session_id: 'f1' });
    expect(forked).to.deep.equal({ session_id: 'f1', forked_from: { session_id: 's1', turn_id: first } });
    await turn(onB, 'f1', 'fork one');
    expect(await owner(url, 'f1'), 'the fork belongs to the node that made it').to.deep.equal(['b']);
    expect(await owner(url, 's1')).to.deep.equal(['a']);
    expect((await lines(onB, 'f1')).at(-1), 'the fork\'s agent saw the line up to the turn').to.equal('assistant: seen 2; last: assistant: seen 0; last: none');

    // Asked of b, carried out by a: a's clients hear it, a's store says so.
    const rewound = await onB.call<{ to_turn_id: string; superseded: string[] }>('session.rewind', { session_id: 's1', to_turn_id: first });
    expect(rewound.to_turn_id).to.equal(first);
    expect(rewound.superseded).to.have.length(1);
    expect((await onA.nextEvent('session.rewound', 's1')).payload).to.deep.equal({ to_turn_id: first, superseded: rewound.superseded });
    expect(await lines(onB, 's1')).to.deep.equal(['user: one', 'assistant: seen 0; last: none']);
    expect(await lines(onA, 's1', true)).to.deep.equal(['user: one', 'assistant: seen 0; last: none', '~user: two', '~assistant: seen 2; last: assistant: seen 0; last: none']);

    const retried = await onB.call<{ turn_id: string; status: string }>('session.retry', { session_id: 's1' });
    await onA.nextEvent('turn.end', 's1', (e) => e.payload['turn_id'] === retried.turn_id);
    expect(await lines(onA, 's1')).to.deep.equal(['user: one', 'assistant: seen 0; last: none']);

    const edited = await onB.call<{ turn_id: string }>('prompt.edit', { session_id: 's1', turn_id: retried.turn_id, text: 'uno' });
    await onA.nextEvent('turn.end', 's1', (e) => e.payload['turn_id'] === edited.turn_id);
    expect(await lines(onB, 's1')).to.deep.equal(['user: uno', 'assistant: seen 0; last: none']);

    const turns = await server().query<{ sid: string; node: string; superseded: boolean }>(
      url,
      'SELECT t.sid, b.node_id AS node, t.superseded_at IS NOT NULL AS superseded FROM turns t JOIN boots b USING (boot_id) ORDER BY t.started_at',
    );
    expect(turns.map((t) => [t.sid, t.node, t.superseded])).to.deep.equal([
      ['s1', 'a', true],
      ['s1', 'a', true],
      ['f1', 'b', false],
      ['s1', 'a', true],
      ['s1', 'a', false],
    ]);
    expect(await owner(url, 's1')).to.deep.equal(['a']);
    expect(await lines(onA, 'f1'), "the source's rewinds leave the fork's line as it was").to.deep.equal([
      'user: one',
      'assistant: seen 0; last: none',
      'user: fork one',
      'assistant: seen 2; last: assistant: seen 0; last: none',
    ]);
  });
});
