// Schedules on several nodes (PROTOCOL.md §8.1, §6.2): two nodes look at the same schedule in the
// store every second; each planned fire is claimed by one of them, and a fire claimed by the node
// that does not own the session reaches it forwarded. Counted fire by fire against the history.
import { expect } from 'chai';
import { clusterForSuite } from '../helpers/cluster.js';
import type { Daemon } from '../helpers/daemon.js';
import { Harness } from '../helpers/processes.js';
import { postgresForSuite } from '../helpers/postgres.js';

const LEASE_SECS = 2;
const FIRES = 8;

/** The planned times a node's scheduler logged as fired, for one schedule. */
function firedBy(daemon: Daemon, scheduleId: string): string[] {
  return daemon.process.stderr
    .split('\n')
    .filter((line) => line.includes('"msg":"schedule fired"'))
    .map((line) => JSON.parse(line) as { schedule: string; planned: string })
    .filter((f) => f.schedule === scheduleId)
    .map((f) => f.planned);
}

describe('schedules on several nodes (real processes, one PostgreSQL)', function () {
  this.timeout(90_000);
  const h = new Harness();
  const server = postgresForSuite();
  const cluster = clusterForSuite(h, LEASE_SECS);

  it('two nodes share one schedule: each planned fire is fired by one node, once, and the history holds one prompt a fire', async () => {
    const url = await server().database();
    const [a, b] = await cluster.daemons(url, ['a', 'b']);
    const onA = await cluster.clientOf(a!);
    const { schedule_id } = await onA.call<{ schedule_id: string }>('schedule.create', { session_id: 'shared', text: 'tick', every_secs: 1 });
    const fired = () => [...firedBy(a!, schedule_id), ...firedBy(b!, schedule_id)];
    await onA.call('session.resume', { session_id: 'shared' });
    await onA.until(() => fired().length >= FIRES && onA.events.filter((e) => e.type === 'turn.end').length >= FIRES, `${FIRES} fires`, 30_000);
    await onA.call('schedule.delete', { schedule_id });
    // Both stopped: no fire is in flight, and the logs and the store are final.
    for (const node of [a!, b!]) expect((await h.runCli(['stop', '--home', node.home])).code).to.equal(0);
    await Promise.all([a!.process.waitExit(15_000), b!.process.waitExit(15_000)]);
    const planned = fired();
    expect(new Set(planned).size, 'no planned time fired twice, by one node or two').to.equal(planned.length);
    const history = JSON.parse((await h.runCli(['history', '--json', '--home', a!.home, '--store', url, 'shared'])).stdout) as { role: string }[];
    expect(history.filter((m) => m.role === 'user').length, `prompts vs fires (${planned.length})`).to.equal(planned.length);
    expect(planned.length).to.be.at.least(FIRES);
  });
});
