import { expect } from 'chai';
import { connect } from 'node:net';
import { join } from 'node:path';
import { startDaemon, TestClient, type Daemon } from '../helpers/daemon.js';
import { Harness } from '../helpers/processes.js';

/** `turnhost repl` with a script on stdin: its whole output. */
async function scripted(h: Harness, args: string[], lines: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = h.spawnCli(['repl', ...args]);
  child.stdin!.end(lines.map((l) => `${l}\n`).join(''));
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  return { code, stdout, stderr };
}

async function hostAlive(daemon: Daemon): Promise<boolean> {
  const client = await TestClient.connect(daemon);
  try {
    return (await client.call<{ host: { state: string } }>('host.status')).host.state === 'running';
  } finally {
    client.close();
  }
}

describe('recovered sessions through the supervisor, and the debug REPL (real processes)', function () {
  this.timeout(40_000);
  const h = new Harness();
  afterEach(() => h.cleanup());

  it('after a host crash: attached clients hear "recovered"; resume shows the state and no open request; sessions shows why', async () => {
    const daemon = await startDaemon(h);
    const client = await TestClient.connect(daemon);
    await client.call('session.create', { session_id: 's1' });
    await client.call('prompt.submit', { session_id: 's1', text: 'first' });
    await client.nextEvent('turn.end', 's1');
    await client.call('prompt.submit', { session_id: 's1', text: '/ask still there?' });
    await client.until(() => client.requests.length === 1, 'the open question');
    const pid = (await client.call<{ host: { pid: number } }>('host.status')).host.pid;
    process.kill(pid, 'SIGKILL');
    const recovered = await client.nextEvent('status.update', 's1', (e) => e.payload['kind'] === 'recovered');
    expect(recovered.payload).to.include({ kind: 'recovered', reason: 'crash' });
    const resumed = await client.call('session.resume', { session_id: 's1' });
    expect(resumed).to.deep.include({ session_id: 's1', status: 'retained', running: false, open_requests: [] });
    const sessions = await h.runCli(['sessions', '--home', daemon.home]);
    expect(sessions.stdout).to.match(/s1\s+retained\s+crash\s+3/);
    await client.call('prompt.submit', { session_id: 's1', text: 'after the crash' });
    expect((await client.nextEvent('turn.end', 's1', (e) => e.payload['message_count'] === 5)).payload).to.include({ interrupted: false });
  });

  it('REPL: the inspection commands print aligned tables; await works; errors stay in the REPL; .exit leaves only the REPL', async () => {
    const daemon = await startDaemon(h);
    const client = await TestClient.connect(daemon);
    await client.call('session.create', { session_id: 'busy' });
    await client.call('prompt.submit', { session_id: 'busy', text: '/ask anything?' });
    await client.until(() => client.requests.length === 1, 'the open question');
    const out = await scripted(h, ['--home', daemon.home], [
      '.sessions',
      '.turns',
      '.requests',
      '.actors',
      '.host',
      '.routes',
      '.sql SELECT sid, status FROM sessions',
      ".sql DELETE FROM sessions",
      '.log 3',
      "(await host('stats')).workers",
      "throw new Error('boom in the repl')",
      'Promise.reject(new Error("rejected in the repl"))',
      'process.exit(1)',
      '.exit',
    ]);
    expect(out.code, out.stderr).to.equal(0);
    const o = out.stdout;
    // The host holds the busy session's queue (empty, not held).
    expect(o).to.match(/SESSION\s+STATUS\s+RUNNING\s+MESSAGES\s+AGE\s+QUEUED\s+HELD\n\s*busy\s+active\s+yes\s+1\s+\d+ s\s+0\s*\n/);
    expect(o).to.match(/SESSION\s+TURN\s+STATE\s+DURATION\s+MODEL\s+TOKENS[^\n]*\n\s*busy\s+turn-\S+\s+running/);
    expect(o).to.match(new RegExp(`REQUEST\\s+SESSION\\s+METHOD\\s+AGE\\n\\s*${client.requests[0]!.id}\\s+busy\\s+clarify\\.request`));
    // The shard that holds the session is listed with it; the 63 others share one line.
    expect(o).to.match(/ACTOR\s+MAILBOX\s+BUSY\n[^]*sessions[^]*shard-\d\d[^\n]*\n[^\n]*busy[^]*\(63 empty shards\)/);
    expect(o.match(/^\s+shard-\d\d/gm)).to.have.length(1);
    expect(o).to.match(/host state\s+running/);
    expect(o).to.match(/boot id\s+[0-9a-f]{32}/);
    expect(o).to.match(/host loop lag/);
    expect(o).to.match(/slash\.retry\s+idle-gated/);
    expect(o).to.match(/sid\s+status\n\s*busy\s+active/);
    expect(o).to.include('read-only: .sql runs queries that return rows; this statement would write, and is refused');
    expect(o).to.match(/turnhost> 8\n/);
    expect(o).to.include('boom in the repl');
    expect(o).to.include('rejected in the repl');
    expect(o).to.include('refused in the REPL');
    expect(await hostAlive(daemon), 'the daemon survived the REPL').to.equal(true);
    expect(daemon.process.child.exitCode).to.equal(null);
  });

  it('REPL: the guard on process stays in the REPL: after a session, stop ends the daemon', async () => {
    const daemon = await startDaemon(h);
    const out = await scripted(h, ['--home', daemon.home], ['.actors', 'process.exit(1)', '.exit']);
    expect(out.stdout).to.include('refused in the REPL');
    // The guard had leaked into the daemon's own global: its exit threw, and it stayed up after stop.
    const stop = await h.runCli(['stop', '--home', daemon.home], {}, 30_000);
    expect(stop.code, stop.stderr).to.equal(0);
    expect((await daemon.process.waitExit(10_000)).code).to.equal(0);
  });

  it('REPL: offers Tab completion of its commands at a terminal', async () => {
    const daemon = await startDaemon(h);
    const socket = connect(join(daemon.home, 'repl.sock'));
    let output = '';
    socket.on('data', (c: Buffer) => (output += c.toString()));
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(`${JSON.stringify({ terminal: true })}\n`);
    socket.write('.sess\t');
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no completion: ${JSON.stringify(output)}`)), 5000);
      const check = () => {
        if (output.includes('.sessions')) {
          clearTimeout(timer);
          resolve();
        } else socket.once('data', check);
      };
      check();
    });
    socket.destroy();
  });

  it('REPL: the socket is private (0600), and --offline reads the database with the daemon down', async () => {
    const daemon = await startDaemon(h);
    const { statSync } = await import('node:fs');
    expect(statSync(join(daemon.home, 'repl.sock')).mode & 0o777).to.equal(0o600);
    const client = await TestClient.connect(daemon);
    await client.call('session.create', { session_id: 'kept' });
    await client.call('prompt.submit', { session_id: 'kept', text: 'for the post-mortem' });
    await client.nextEvent('turn.end', 'kept');
    client.close();
    expect((await h.runCli(['stop', '--home', daemon.home])).code).to.equal(0);
    const online = await h.runCli(['repl', '--home', daemon.home]);
    expect(online.code).to.equal(3);
    expect(online.stderr).to.include('--offline');
    const out = await scripted(h, ['--home', daemon.home, '--offline'], ['.sessions', '.sql SELECT count(*) AS n FROM messages', '.log 2', '.sql UPDATE sessions SET status = 1']);
    expect(out.code, out.stderr).to.equal(0);
    expect(out.stdout).to.match(/kept\s+finalized\s+compute_host_shutdown\s+2/);
    expect(out.stdout).to.match(/n\n2\n/);
    expect(out.stdout).to.include('"msg":"daemon exiting"');
    expect(out.stdout).to.include('refused');
  });
});
