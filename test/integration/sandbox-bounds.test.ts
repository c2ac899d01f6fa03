// The sandbox's bounds (AGENT.md §7) on a real daemon with the Python guest, its commands allowed by
// policy: a session whose processes pass `sandbox.memory_mb` (or run away forking) is ended whole,
// its turn fails with reason `resources`, and the session goes on at its next turn, while another
// session's turns run on; `max_open_files` holds for each process.
import { expect } from 'chai';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startDaemon, TestClient } from '../helpers/daemon.js';
import { PYTHON_GUEST } from '../helpers/guests.js';
import { Harness } from '../helpers/processes.js';

describe('the sandbox bounds a session\'s processes (real daemon, the Python guest, bubblewrap)', function () {
  this.timeout(120_000);
  const h = new Harness();
  afterEach(() => h.cleanup());

  async function daemonWith(sandbox: Record<string, unknown>): Promise<{ client: TestClient }> {
    const dir = h.tempDir('turnhost-bounds-');
    const config = join(dir, 'agent.json');
    writeFileSync(config, JSON.stringify({ acp: { command: 'python3', args: [PYTHON_GUEST, dir] }, approval: { default: 'allow' }, sandbox }));
    const daemon = await startDaemon(h, ['--agent', 'acp', '--agent-config', config], {}, join(dir, 'home'));
    return { client: await TestClient.connect(daemon) };
  }

  /** The turn's end or error, whichever comes. */
  async function outcome(client: TestClient, sid: string, turnId: string): Promise<{ type: string; payload: Record<string, unknown> }> {
    const over = (e: { session_id: string; type: string; payload: Record<string, unknown> }) => e.session_id === sid && (e.type === 'turn.end' || e.type === 'turn.error') && e.payload['turn_id'] === turnId;
    await client.until(() => client.events.some(over), `the end of ${turnId}`, 60_000);
    return client.events.find(over)!;
  }

  /** Submits `run <command>` and waits for its end: how it ended, and the reply. */
  async function run(client: TestClient, sid: string, command: string): Promise<{ type: string; payload: Record<string, unknown>; reply: string }> {
    const { turn_id } = await client.call<{ turn_id: string }>('prompt.submit', { session_id: sid, text: `run ${command}` });
    const last = await outcome(client, sid, turn_id);
    const started = client.events.findIndex((e) => e.type === 'turn.started' && e.payload['turn_id'] === turn_id);
    const reply = client.events.slice(started).filter((e) => e.session_id === sid && e.type === 'message.delta').map((e) => String(e.payload['text'])).join('');
    return { ...last, reply };
  }

  it('a tree over memory_mb is ended (turn.error reason resources) and the session goes on; another session runs on; max_open_files holds', async () => {
    const { client } = await daemonWith({ memory_mb: 128, max_open_files: 64 });
    await client.call('session.create', { session_id: 'hog' });
    await client.call('session.create', { session_id: 'calm' });
    expect((await run(client, 'calm', 'echo calm')).reply).to.equal('ran echo calm: calm');

    const { turn_id } = await client.call<{ turn_id: string }>('prompt.submit', { session_id: 'hog', text: 'run python3 -c "import time; b = b\'x\' * (300 << 20); time.sleep(60)"' });
    // While the hog grows, the other session's turns run.
    expect((await run(client, 'calm', 'echo still here')).reply).to.equal('ran echo still here: still here');
    const ended = await outcome(client, 'hog', turn_id);
    expect(ended.type).to.equal('turn.error');
    expect(ended.payload['reason']).to.equal('resources');
    expect(String(ended.payload['message'])).to.match(/used \d+ MB, more than sandbox\.memory_mb \(128\)/);
    // The session goes on at its next turn, in a new sandbox.
    expect((await run(client, 'hog', 'echo back')).reply).to.equal('ran echo back: back');
    expect((await run(client, 'hog', 'sh -c "ulimit -n"')).reply).to.equal('ran sh -c "ulimit -n": 64');
  });

  it('a runaway fork in one session is ended within seconds; the other session\'s turns run on', async () => {
    const { client } = await daemonWith({});
    await client.call('session.create', { session_id: 'bomb' });
    await client.call('session.create', { session_id: 'calm' });
    await run(client, 'calm', 'echo ready');
    const { turn_id } = await client.call<{ turn_id: string }>('prompt.submit', { session_id: 'bomb', text: 'run while true; do sleep 600 & done' });
    await client.nextEvent('turn.started', 'bomb', (e) => e.payload['turn_id'] === turn_id);
    const started = Date.now();
    const calm = await run(client, 'calm', 'echo unharmed');
    expect(calm.reply).to.equal('ran echo unharmed: unharmed');
    const ended = await outcome(client, 'bomb', turn_id);
    expect(ended.type).to.equal('turn.error');
    expect(ended.payload['reason']).to.equal('resources');
    expect(String(ended.payload['message'])).to.match(/its processes numbered more than 512/);
    const tookMs = Date.now() - started;
    expect(tookMs, 'ended within seconds').to.be.below(10_000);
    process.stdout.write(`      (the fork bomb was ended ${tookMs} ms after its turn started: ${String(ended.payload['message']).replace(/.*: /, '')})\n`);
    expect((await run(client, 'bomb', 'echo after')).reply).to.equal('ran echo after: after');
  });
});
