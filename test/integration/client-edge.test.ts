import { expect } from 'chai';
import { connect } from 'node:net';
import { join } from 'node:path';
import { isZombie, processAlive } from '../../persistence/proc.js';
import { hostPid, hostReady, startDaemon, TestClient } from '../helpers/daemon.js';
import { Harness } from '../helpers/processes.js';

const gone = (pid: number) => !processAlive(pid) || isZombie(pid);

describe('the client edge: readiness, stop, the REPL socket (real processes)', function () {
  this.timeout(120_000);
  const h = new Harness();
  afterEach(() => h.cleanup());

  it('kill -9 of the host, then an immediate prompt.submit: it waits for the new host and runs', async () => {
    const daemon = await startDaemon(h);
    const client = await TestClient.connect(daemon);
    await client.call('session.create', { session_id: 's1' });
    process.kill(await hostPid(client), 'SIGKILL');
    const submitted = await client.call<{ status: string }>('prompt.submit', { session_id: 's1', text: 'right after the crash' });
    expect(submitted.status).to.equal('streaming');
    await client.nextEvent('turn.end', 's1');
    expect(client.reply('s1')).to.equal('right after the crash');
    await hostReady(daemon, 2);
  });

  it('a host that cannot start: `start` exits 1 with the host\'s own error, and leaves no daemon behind', async () => {
    const home = h.tempDir();
    const started = await h.runCli(['start', '--home', home, '--agent', 'test/fixtures/throwing-agent.mjs'], {}, 30_000);
    expect(started.code).to.equal(1);
    expect(started.stderr.trim().split('\n')).to.have.length(1);
    expect(started.stderr).to.include('this agent refuses to load: missing credentials file');
    const status = await h.runCli(['status', '--home', home]);
    expect(status.code).to.equal(3);
  });

  it('`stop` returns only once the daemon and host processes are gone', async () => {
    const home = h.tempDir();
    expect((await h.runCli(['start', '--home', home])).code).to.equal(0);
    const status = JSON.parse((await h.runCli(['status', '--home', home, '--json'])).stdout) as { supervisor: { pid: number }; host: { pid: number } };
    const stopped = await h.runCli(['stop', '--home', home]);
    expect(stopped.code).to.equal(0);
    expect(gone(status.supervisor.pid), 'daemon').to.equal(true);
    expect(gone(status.host.pid), 'host').to.equal(true);
  });

  it('the REPL socket runs a command sent before its prompt, by a client that closes its side at once', async () => {
    const daemon = await startDaemon(h);
    const send = (input: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect(join(daemon.home, 'repl.sock'));
        let text = '';
        socket.on('data', (c: Buffer) => (text += c.toString()));
        socket.on('close', () => resolve(text));
        socket.on('error', reject);
        socket.on('connect', () => socket.end(input));
      });
    const out = await send('.sessions\n.routes\n');
    expect(out).to.include('(none)');
    expect(out).to.match(/ROUTE\s+CLASS/);
    // printf '.routes' | socat …: no newline at all, and the input already closed.
    expect(await send('.routes')).to.match(/ROUTE\s+CLASS/);
  });
});
