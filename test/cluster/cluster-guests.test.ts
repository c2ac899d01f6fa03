// A guest agent's session moving to another node (AGENT.md §6, PROTOCOL.md §6.2): the node that
// takes it over loads the guest's session by its stored id. The guest's memory is where the guest
// keeps it: a folder both nodes see, or one of each node's own (then it starts anew, and says so).
import { expect } from 'chai';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { nodeArgs } from '../helpers/cluster.js';
import { hostPid, startDaemon, TestClient } from '../helpers/daemon.js';
import { guestArgs, guestScene } from '../helpers/guests.js';
import { Harness } from '../helpers/processes.js';
import { postgresForSuite } from '../helpers/postgres.js';

const LEASE_SECS = 2;

describe('a guest agent on several nodes: a takeover loads its session on the new node (real processes)', function () {
  this.timeout(90_000);
  const h = new Harness();
  const server = postgresForSuite();
  const clients: TestClient[] = [];
  afterEach(async () => {
    for (const client of clients.splice(0)) client.close();
    await h.cleanup();
  });

  async function moved(shared: boolean): Promise<{ reply: string; context: string | undefined }> {
    const url = await server().database();
    const onA = guestScene(h);
    const onB = guestScene(h);
    const a = await startDaemon(h, [...nodeArgs(url, 'a', LEASE_SECS), ...guestArgs(onA), '--listen', '127.0.0.1:0'], {}, onA.home);
    const b = await startDaemon(h, [...nodeArgs(url, 'b', LEASE_SECS), ...guestArgs(onB), '--listen', '127.0.0.1:0'], {}, onB.home);
    const clientA = await TestClient.connect(a);
    clients.push(clientA);
    // The guest keeps its sessions in the session's folder: one both nodes see, or each node's own workspace.
    await clientA.call('session.create', { session_id: 'g', ...(shared ? { cwd: h.tempDir('turnhost-shared-') } : {}) });
    const first = await clientA.call<{ turn_id: string }>('prompt.submit', { session_id: 'g', text: 'one' });
    await clientA.nextEvent('turn.end', 'g', (e) => e.payload['turn_id'] === first.turn_id);
    await clientA.call('prompt.submit', { session_id: 'g', text: 'slow' });
    await clientA.until(() => clientA.events.filter((e) => e.type === 'message.delta').length >= 5, 'the slow turn under way');
    const queued = await clientA.call<{ queue_id: string }>('prompt.submit', { session_id: 'g', text: 'memory', on_busy: 'queue' });
    for (const pid of [a.process.pid, await hostPid(clientA)]) process.kill(pid, 'SIGKILL');
    await a.process.waitExit();

    const clientB = await TestClient.connect(b);
    clients.push(clientB);
    await clientB.call('session.resume', { session_id: 'g' });
    await clientB.nextEvent('turn.error', 'g');
    const end = await clientB.nextEvent('turn.end', 'g', (e) => e.payload['queue_id'] === queued.queue_id);
    const fromB = clientB.events.filter((e) => e.session_id === 'g').slice(clientB.events.filter((e) => e.session_id === 'g').findIndex((e) => e.type === 'turn.started' && e.payload['turn_id'] === end.payload['turn_id']));
    return {
      reply: fromB.filter((e) => e.type === 'message.delta').map((e) => String(e.payload['text'])).join(''),
      context: fromB.find((e) => e.type === 'status.update' && e.payload['kind'] === 'context')?.payload['text'] as string | undefined,
    };
  }

  it('with the guest\'s folder shared by the nodes, the session loads on the new node: the guest remembers', async () => {
    const { reply, context } = await moved(true);
    expect(reply).to.equal('seen: one | slow | memory');
    expect(context).to.equal(undefined);
  });

  it('with a folder of each node\'s own, the guest cannot load it there: it starts anew and the turn says so', async () => {
    const { reply, context } = await moved(false);
    expect(reply).to.equal('seen: memory');
    expect(context).to.match(/could not load its session .*: it starts without its memory of the \d+ earlier messages/);
  });

  it('the guest session id is in the store, committed with the session', async () => {
    const url = await server().database();
    const scene = guestScene(h);
    const daemon = await startDaemon(h, [...nodeArgs(url, 'a', LEASE_SECS), ...guestArgs(scene)], {}, scene.home);
    const client = await TestClient.connect(daemon);
    clients.push(client);
    await client.call('session.create', { session_id: 'stored' });
    const turn = await client.call<{ turn_id: string }>('prompt.submit', { session_id: 'stored', text: 'pid' });
    await client.nextEvent('turn.end', 'stored', (e) => e.payload['turn_id'] === turn.turn_id);
    const rows = await server().query<{ agent_session_id: string }>(url, "SELECT agent_session_id FROM sessions WHERE sid = 'stored'");
    expect(rows[0]!.agent_session_id).to.match(/^guest-\d+-1$/);
    expect(existsSync(join(scene.home, 'workspaces', 'owner', 'stored', `guest-session-${rows[0]!.agent_session_id}.json`))).to.equal(true);
  });
});
