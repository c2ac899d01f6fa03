import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { CLI, Harness, HostProcess, type Frame } from '../helpers/processes.js';

const turn = (sid: string, text: string) => ({ type: 'turn.start', sid, request_id: `r-${sid}`, text });

async function sessionsOf(h: Harness, home: string): Promise<Record<string, { status: string; end_reason: string | null; retained_reason: string | null }>> {
  const out = await h.runCli(['sessions', '--home', home, '--json']);
  expect(out.code, out.stderr).to.equal(0);
  const list = JSON.parse(out.stdout) as { session_id: string; status: string; end_reason: string | null; retained_reason: string | null }[];
  return Object.fromEntries(list.map((s) => [s.session_id, s]));
}

/** Gone, or a zombie waiting for a reaper that is not ours (an orphan's new parent may never reap it). */
function hasExited(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

/** One idle session and one in /sleep 30. */
async function idleAndSleeping(host: HostProcess): Promise<void> {
  host.send(turn('idle', 'hi'));
  await host.next('turn.end', { where: (f) => f['sid'] === 'idle' });
  host.send(turn('sleepy', 'zzz\n/sleep 30'));
  await host.next('turn.started', { where: (f) => f['sid'] === 'sleepy' });
}

describe('shutdown triggers (real host process)', function () {
  this.timeout(30_000);
  const h = new Harness();
  afterEach(() => h.cleanup());

  it('SIGTERM: exits 0 within 10 s, the idle session finalized, the sleeping one retained', async () => {
    const home = h.tempDir();
    const host = await h.startHost(home);
    await idleAndSleeping(host);
    const started = performance.now();
    host.kill('SIGTERM');
    const exit = await host.waitExit(12_000);
    const elapsedSec = (performance.now() - started) / 1000;
    expect(exit.code).to.equal(0);
    expect(elapsedSec).to.be.lessThan(10);
    expect(elapsedSec, 'the drain waits for the sleeping turn until its deadline').to.be.at.least(8.9);
    const sessions = await sessionsOf(h, home);
    expect(sessions['idle']).to.include({ status: 'finalized', end_reason: 'compute_host_sigterm' });
    expect(sessions['sleepy']).to.include({ status: 'retained', retained_reason: 'drain_deadline' });
  });

  it('stdin closed: exits within 2 s with compute_host_stdin_closed, after living out the 1 s drain', async () => {
    const home = h.tempDir();
    const host = await h.startHost(home);
    await idleAndSleeping(host);
    const closedAt = performance.now();
    host.closeStdin();
    const exit = await host.waitExit(3_000);
    const livedSec = (performance.now() - closedAt) / 1000;
    expect(exit.code).to.equal(0);
    expect(livedSec).to.be.at.least(1).and.lessThan(2);
    const sessions = await sessionsOf(h, home);
    expect(sessions['idle']).to.include({ status: 'finalized', end_reason: 'compute_host_stdin_closed' });
    expect(sessions['sleepy']).to.include({ status: 'retained', retained_reason: 'drain_deadline' });
  });

  it('stdin closed with nothing running: exits at once', async () => {
    const home = h.tempDir();
    const host = await h.startHost(home);
    host.send(turn('s1', 'hi'));
    await host.next('turn.end');
    const closedAt = performance.now();
    host.closeStdin();
    expect((await host.waitExit(3_000)).code).to.equal(0);
    expect(performance.now() - closedAt).to.be.lessThan(1000);
  });

  it('a shutdown frame: shutdown.ack with the report, then exit 0', async () => {
    const home = h.tempDir();
    const host = await h.startHost(home);
    await idleAndSleeping(host);
    host.send({ type: 'shutdown', request_id: 'bye', wait: 3 });
    const ack = await host.next('shutdown.ack');
    expect(ack).to.include({ request_id: 'bye', reason: 'shutdown' });
    expect(ack['finalized']).to.deep.equal(['idle']);
    expect(ack['retained']).to.deep.equal(['sleepy']);
    expect(ack['elapsed_ms']).to.be.a('number').within(1900, 3000);
    expect((await host.waitExit()).code).to.equal(0);
    const sessions = await sessionsOf(h, home);
    expect(sessions['idle']).to.include({ status: 'finalized', end_reason: 'compute_host_shutdown' });
  });

  it('parent death: an orphan frame, then the flush with compute_host_orphan, then exit', async () => {
    const home = h.tempDir();
    // The host's stdin is a FIFO this test holds open, so only the parent guard can notice the death.
    const fifo = join(home, 'host-stdin');
    execFileSync('mkfifo', [fifo]);
    const stdin = openSync(fifo, 'r+');
    const intermediate = new HostProcess(
      h.spawnRaw(process.execPath, ['test/fixtures/intermediate-parent.mjs', fifo, process.execPath, CLI, 'host', '--home', home, '--heartbeat-secs', '1']),
    );
    const hello = await intermediate.next('hello');
    writeSync(stdin, `${JSON.stringify(turn('s1', 'hi'))}\n`);
    await intermediate.next('turn.end');
    const hostPid = hello['host_pid'] as number;
    const stdoutClosed = new Promise<void>((resolve) => intermediate.child.stdout!.once('close', () => resolve()));
    const killedAt = performance.now();
    intermediate.kill('SIGKILL');
    const orphan: Frame = await intermediate.next('orphan', { timeoutMs: 5_000 });
    expect(orphan['old_ppid']).to.equal(intermediate.pid);
    expect(orphan['ppid']).to.not.equal(intermediate.pid);
    await stdoutClosed;
    expect(performance.now() - killedAt, 'detected within about a second, nothing to drain').to.be.lessThan(3_000);
    expect(hasExited(hostPid), 'the orphaned host has exited').to.equal(true);
    closeSync(stdin);
    const sessions = await sessionsOf(h, home);
    expect(sessions['s1']).to.include({ status: 'finalized', end_reason: 'compute_host_orphan' });
  });

  /** A host with one idle and one sleeping session, in the drain of a SIGTERM shutdown. */
  async function draining(home: string): Promise<HostProcess> {
    const host = await h.startHost(home, [], { TURNHOST_LOG_LEVEL: 'info' });
    await idleAndSleeping(host);
    host.kill('SIGTERM');
    await host.logged(/"msg":"shutdown started"/);
    return host;
  }

  it('a second SIGTERM during the drain retains the laggards at once and still flushes', async () => {
    const home = h.tempDir();
    const host = await draining(home);
    const secondAt = performance.now();
    host.kill('SIGTERM');
    expect((await host.waitExit(5_000)).code).to.equal(0);
    expect(performance.now() - secondAt).to.be.lessThan(2_000);
    const sessions = await sessionsOf(h, home);
    expect(sessions['idle']).to.include({ status: 'finalized', end_reason: 'compute_host_sigterm' });
    expect(sessions['sleepy']).to.include({ status: 'retained', retained_reason: 'drain_deadline' });
  });

  it('during a shutdown: a new turn is refused; interrupt, respond, control and debug are answered', async () => {
    const home = h.tempDir();
    const host = await draining(home);
    host.send(turn('newcomer', 'hello?'));
    expect(await host.next('turn.error')).to.include({ sid: 'newcomer', message: 'host shutting down', reason: 'shutting_down' });
    host.send({ type: 'control', sid: 'idle', request_id: 'c1', route_name: 'slash.model', params: { model: 'm' } });
    expect(await host.next('control.ack')).to.include({ request_id: 'c1' });
    host.send({ type: 'respond', sid: 'idle', request_id: 'x1', params: { frame: { jsonrpc: '2.0', id: 'srq-000000000000', result: {} } } });
    expect(((await host.next('respond.ack'))['response'] as { result: unknown }).result).to.deep.equal({ status: 'expired' });
    host.send({ type: 'debug', request_id: 'd1', what: 'stats' });
    expect((await host.next('debug.result'))['result']).to.include({ shuttingDown: true });
    host.send({ type: 'interrupt', sid: 'sleepy', request_id: 'i1' });
    expect(await host.next('interrupt.ack')).to.include({ applied: true });
    expect(await host.next('turn.end')).to.include({ sid: 'sleepy', interrupted: true });
    expect((await host.waitExit(5_000)).code).to.equal(0);
    const sessions = await sessionsOf(h, home);
    expect(sessions['sleepy']).to.include({ status: 'finalized', end_reason: 'compute_host_sigterm' });
  });
});
