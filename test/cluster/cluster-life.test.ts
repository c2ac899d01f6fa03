// A session's life on several nodes (PROTOCOL.md §2.3, §6.2), real daemons on one PostgreSQL: a
// delete asked of any node is carried out by the owner, which drops its live state; the id is
// refused on every node after; retention on two nodes, one sweep at a time, deletes a session
// whichever node owns it, once.
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { endedTurn, rpcCode } from '../helpers/daemon.js';
import { clusterForSuite } from '../helpers/cluster.js';
import { loggedWhere } from '../helpers/guests.js';
import { postgresForSuite } from '../helpers/postgres.js';
import { Harness } from '../helpers/processes.js';

const LEASE_SECS = 2;

describe("a session's life on several nodes (real daemons, one PostgreSQL)", function () {
  this.timeout(90_000);
  const h = new Harness();
  const server = postgresForSuite();
  const { daemons, clientOf } = clusterForSuite(h, LEASE_SECS);

  it('a delete asked of b is carried out by a, the owner, whose host lets the session go; the id is refused on both after', async () => {
    const url = await server().database();
    const [a, b] = await daemons(url, ['a', 'b']);
    const onA = await clientOf(a);
    const onB = await clientOf(b);
    await onA.call('session.create', { session_id: 's1' });
    await endedTurn(onA, 's1', 'hello');
    expect(await server().query(url, "SELECT node_id FROM leases WHERE sid = 's1'")).to.deep.equal([{ node_id: 'a' }]);

    expect(await onB.call('session.delete', { session_id: 's1' })).to.deep.equal({ session_id: 's1', deleted: true });
    await onA.nextEvent('session.deleted', 's1');
    expect(await server().query(url, "SELECT sid FROM leases WHERE sid = 's1'"), "a's host let it go").to.deep.equal([]);
    for (const client of [onA, onB]) {
      expect(await rpcCode(client.call('session.history', { session_id: 's1' }))).to.equal(4004);
      expect(await rpcCode(client.call('session.create', { session_id: 's1' }))).to.equal(-32602);
    }
  });

  it('retention on both nodes: each idle session is deleted once, by whichever node holds the sweep, wherever the session lives', async () => {
    const url = await server().database();
    const [a, b] = await daemons(url, ['a', 'b'], ['--retention-days', '0.00003', '--retention-sweep-secs', '1']);
    const onA = await clientOf(a);
    const onB = await clientOf(b);
    for (const [client, sid] of [[onA, 'on-a'], [onB, 'on-b']] as const) {
      await client.call('session.create', { session_id: sid });
      await endedTurn(client, sid, 'hello');
    }
    await onA.nextEvent('session.deleted', 'on-a');
    await onB.nextEvent('session.deleted', 'on-b');
    const deleted = (lines: string[]) => lines.filter((l) => l.includes('"name":"retention-sweep"')).reduce((sum, l) => sum + Number((JSON.parse(l) as { deleted: number }).deleted), 0);
    const bLines = () => readFileSync(join(b.home, 'logs', 'turnhost.log'), 'utf8').split('\n');
    // The sweeps' own counts, on both nodes, come to two once both have logged: never more.
    await loggedWhere(a.home, (lines) => deleted(lines) + deleted(bLines()) === 2, 'two deletions logged by the sweeps', 20_000);
    expect(await server().query(url, 'SELECT sid FROM deleted_sessions ORDER BY sid')).to.deep.equal([{ sid: 'on-a' }, { sid: 'on-b' }]);
    expect(await server().query(url, "SELECT holder FROM sweeps WHERE name = 'retention'")).to.have.length(1);
  });
});
