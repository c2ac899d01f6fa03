// Several agents across nodes (AGENT.md §8): each node reads its own agent config. `turnhost
// cluster` shows each node's catalogue digest; a session taken over by a node whose catalogue lacks
// its agent keeps its history, and its turns there end with reason `agent`, naming that node.
import { expect } from 'chai';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { clusterForSuite, nodeArgs } from '../helpers/cluster.js';
import { hostPid, startDaemon } from '../helpers/daemon.js';
import { Harness } from '../helpers/processes.js';
import { postgresForSuite } from '../helpers/postgres.js';

const LEASE_SECS = 2;

describe('several agents on a cluster: each node its own catalogue (real processes, PostgreSQL)', function () {
  this.timeout(90_000);
  const h = new Harness();
  const server = postgresForSuite();
  const cluster = clusterForSuite(h, LEASE_SECS);

  it("turnhost cluster shows each node's catalogue digest; a session taken over by a node that lacks its agent fails there with reason agent, naming the node", async () => {
    const url = await server().database();
    const dir = h.tempDir('turnhost-cluster-agents-');
    const configOf = (name: string, agents: Record<string, unknown>): string => {
      const file = join(dir, `${name}.json`);
      writeFileSync(file, JSON.stringify({ agents }));
      return file;
    };
    const withExtra = configOf('a', { quick: { kind: 'script' }, extra: { kind: 'script', label: 'Only on a' } });
    const without = configOf('b', { quick: { kind: 'script' } });
    const a = await startDaemon(h, [...nodeArgs(url, 'a', LEASE_SECS), '--agent-config', withExtra, '--listen', '127.0.0.1:0'], {}, join(dir, 'home-a'));
    const b = await startDaemon(h, [...nodeArgs(url, 'b', LEASE_SECS), '--agent-config', without, '--listen', '127.0.0.1:0'], {}, join(dir, 'home-b'));
    const onA = await cluster.clientOf(a);
    await onA.call('session.create', { session_id: 'x', agent: 'extra' });
    const first = await onA.call<{ turn_id: string }>('prompt.submit', { session_id: 'x', text: 'on a' });
    await onA.nextEvent('turn.end', 'x', (e) => e.payload['turn_id'] === first.turn_id);

    // Each node's digest: a node's row is written with its first heartbeat, before its host says hello.
    const nodes = JSON.parse((await h.runCli(['cluster', '--home', b.home, '--json'])).stdout) as { node_id: string; catalogue: string | null }[];
    const digests = Object.fromEntries(nodes.map((n) => [n.node_id, n.catalogue]));
    expect(digests['a']).to.match(/^[0-9a-f]{16}$/);
    expect(digests['b']).to.match(/^[0-9a-f]{16}$/);
    expect(digests['a'], 'the nodes read different agent configs').to.not.equal(digests['b']);
    expect((await h.runCli(['cluster', '--home', b.home])).stdout).to.include(digests['b']!);

    for (const pid of [a.process.pid, await hostPid(onA)]) process.kill(pid, 'SIGKILL');
    await a.process.waitExit();
    await server().leaseExpired(url, 'x');
    const onB = await cluster.clientOf(b);
    await onB.call('session.resume', { session_id: 'x' });
    const next = await onB.call<{ turn_id: string }>('prompt.submit', { session_id: 'x', text: 'on b' });
    const error = await onB.nextEvent('turn.error', 'x', (e) => e.payload['turn_id'] === next.turn_id);
    expect(error.payload).to.deep.include({ reason: 'agent', message: 'agent extra is not in the catalogue of node b' });
    const history = await onB.call<{ messages: { content: string }[] }>('session.history', { session_id: 'x' });
    expect(history.messages.map((m) => m.content).slice(0, 2), 'its history is whole').to.deep.equal(['on a', 'on a']);
  });
});
