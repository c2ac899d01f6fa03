import { expect } from 'chai';
import { RpcError } from '../../protocol/client-rpc.js';
import { hostPid, hostReady, startDaemon, TestClient, type Daemon, type HostStatus } from '../helpers/daemon.js';
import { Harness } from '../helpers/processes.js';


/** Returns how long after turn.started the crash reached the client. */
async function crashDuringTurn(client: TestClient, daemon: Daemon, sid: string, text: string, kill: (pid: number) => void): Promise<number> {
  await client.call('session.create', { session_id: sid });
  await client.call('prompt.submit', { session_id: sid, text });
  await client.nextEvent('turn.started', sid);
  const startedAt = performance.now();
  kill(await hostPid(client));
  const error = await client.nextEvent('error', sid);
  const crashMs = performance.now() - startedAt;
  expect(error.payload).to.include({ reason: 'crash' });
  const turnError = await client.nextEvent('turn.error', sid);
  expect(turnError.payload).to.include({ reason: 'crash' });
  await hostReady(daemon, 2);
  return crashMs;
}

describe('daemon: host failures (real processes)', function () {
  this.timeout(40_000);
  const h = new Harness();
  afterEach(() => h.cleanup());

  it('kill -9 of the host: the pending turn gets an error event and turn.error (crash); the host comes back', async () => {
    const daemon = await startDaemon(h);
    const client = await TestClient.connect(daemon);
    await crashDuringTurn(client, daemon, 's1', '/sleep 30', (pid) => process.kill(pid, 'SIGKILL'));
    const status = await client.call<HostStatus>('host.status');
    expect(status.host).to.include({ state: 'running', restarts: 1 });
    await client.call('prompt.submit', { session_id: 's1', text: 'after the crash' });
    await client.nextEvent('turn.end', 's1');
    expect(client.reply('s1')).to.equal('after the crash');
  });

  it('watchdog: a host whose loop is blocked (/spin 5000, 1 s heartbeat) is killed and respawned', async () => {
    const daemon = await startDaemon(h, ['--heartbeat-secs', '1']);
    const client = await TestClient.connect(daemon);
    const crashMs = await crashDuringTurn(client, daemon, 's1', '/spin 5000', () => {});
    expect(daemon.process.stderr).to.include('missed heartbeats');
    expect(crashMs, 'killed after about 3 silent heartbeats, before the spin would have ended').to.be.lessThan(5_000);
  });

  it('watchdog: a SIGSTOPped host is killed and respawned', async () => {
    const daemon = await startDaemon(h, ['--heartbeat-secs', '1']);
    const client = await TestClient.connect(daemon);
    await crashDuringTurn(client, daemon, 's1', '/sleep 30', (pid) => process.kill(pid, 'SIGSTOP'));
    expect(daemon.process.stderr).to.include('missed heartbeats');
  });

  it('more than 3 restarts in 300 s: failed, clients get 5019 crash_loop, status shows it, host.restart clears it', async () => {
    const daemon = await startDaemon(h, ['--workers', '1']);
    const client = await TestClient.connect(daemon);
    for (let crash = 1; crash <= 3; crash++) {
      process.kill(await hostPid(client), 'SIGKILL');
      await hostReady(daemon, crash + 1);
    }
    const backoffs = [...daemon.process.stderr.matchAll(/"delayMs":(\d+)/g)].map((m) => Number(m[1]));
    expect(backoffs).to.deep.equal([250, 500, 1000]);
    // One turn holds the only worker; another is accepted and waits for it when the host dies for good.
    await client.call('prompt.submit', { session_id: 'busy', text: '/sleep 30' });
    await client.nextEvent('turn.started', 'busy');
    const waiting = await client.call<{ status: string; turn_id: string }>('prompt.submit', { session_id: 'waits', text: 'after it' });
    expect(waiting.status).to.equal('streaming');
    process.kill(await hostPid(client), 'SIGKILL');
    await daemon.process.logged(/crash loop/);
    // Both turns end for their clients: the running one and the one that never got a worker.
    expect((await client.nextEvent('turn.error', 'busy')).payload).to.include({ reason: 'crash' });
    expect((await client.nextEvent('turn.error', 'waits')).payload).to.include({ turn_id: waiting.turn_id, reason: 'crash' });
    const status = await client.call<HostStatus>('host.status');
    expect(status.host.state).to.equal('failed');
    expect(status.host.last_error).to.match(/crash loop/);
    const refused = await client.call('prompt.submit', { session_id: 's1', text: 'hello?' }).catch((e: unknown) => e);
    expect(refused).to.be.instanceOf(RpcError);
    expect((refused as RpcError).code).to.equal(5019);
    expect((refused as RpcError).data).to.deep.equal({ reason: 'crash_loop' });
    const text = await h.runCli(['status', '--home', daemon.home]);
    expect(text.stdout).to.match(/host state\s+failed/);
    expect(await client.call('host.restart')).to.deep.equal({ state: 'restarting' });
    await hostReady(daemon, 5);
    await client.call('session.create', { session_id: 's1' });
    await client.call('prompt.submit', { session_id: 's1', text: 'back again' });
    await client.nextEvent('turn.end', 's1');
  });
});
