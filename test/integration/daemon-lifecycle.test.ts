import { expect } from 'chai';
import { cpSync, existsSync, readFileSync, statSync, writeFileSync, appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { readCommandLine } from '../../persistence/proc.js';
import { startDaemon, TestClient } from '../helpers/daemon.js';
import { Harness, HostProcess, REPO_ROOT } from '../helpers/processes.js';

interface Status {
  supervisor: { pid: number; home: string };
  host: { pid: number | null; state: string; restarts: number; last_error: string | null; boot_id: string | null };
  sessions: { active: number; running: number; retained: number; finalized: number };
}

async function status(h: Harness, home: string): Promise<Status> {
  const out = await h.runCli(['status', '--home', home, '--json']);
  expect(out.code, out.stderr).to.equal(0);
  return JSON.parse(out.stdout) as Status;
}

function logText(home: string): string {
  return readFileSync(join(home, 'logs', 'turnhost.log'), 'utf8');
}

describe('daemon lifecycle (real processes)', function () {
  this.timeout(40_000);
  const h = new Harness();
  afterEach(() => h.cleanup());

  it('start, a second start, status, stop, status again: the exit codes and messages of PROTOCOL.md §3', async () => {
    const home = join(h.tempDir(), 'home');
    const start = await h.runCli(['start', '--home', home]);
    expect(start.code, start.stderr).to.equal(0);
    const pid = Number(start.stdout.trim());
    expect(pid).to.be.greaterThan(0);
    expect(statSync(home).mode & 0o777).to.equal(0o700);
    expect(statSync(join(home, 'turnhost.sock')).mode & 0o777).to.equal(0o600);
    const again = await h.runCli(['start', '--home', home]);
    expect(again.code).to.equal(1);
    expect(again.stderr.trim().split('\n')).to.have.length(1);
    expect(again.stderr).to.include(`already running in ${home} (pid ${pid})`);
    const s = await status(h, home);
    expect(s.supervisor).to.include({ pid, home });
    expect(['starting', 'running']).to.include(s.host.state);
    const text = await h.runCli(['status', '--home', home]);
    expect(text.stdout).to.match(/supervisor pid\s+\d+/);
    const stop = await h.runCli(['stop', '--home', home]);
    expect(stop.code, stop.stderr).to.equal(0);
    expect(stop.stdout).to.match(/^stopped: \d+ session\(s\) finalized, \d+ retained\n$/);
    expect(existsSync(join(home, 'turnhost.sock'))).to.equal(false);
    expect(existsSync(join(home, 'state', 'compute-host.json'))).to.equal(false);
    const after = await h.runCli(['status', '--home', home]);
    expect(after.code).to.equal(3);
    expect(after.stderr.trim()).to.equal(`turnhost status: no daemon is running in ${home}`);
    expect((await h.runCli(['stop', '--home', home])).code).to.equal(3);
  });

  it('holds one daemon per home with a lock the kernel releases, and removes a stale socket file', async () => {
    const home = h.tempDir();
    writeFileSync(join(home, 'turnhost.sock'), 'left over by a crash');
    const daemon = await startDaemon(h, [], {}, home);
    const second = await h.runCli(['daemon', '--home', home]);
    expect(second.code).to.equal(1);
    expect(second.stderr).to.include('a daemon is already running');
    daemon.process.kill('SIGKILL');
    await daemon.process.waitExit();
    const next = await startDaemon(h, [], {}, home);
    const client = await TestClient.connect(next);
    expect((await client.call<{ host: { state: string } }>('host.status')).host.state).to.equal('running');
    client.close();
  });

  it('writes the registry after a valid hello (0600, the DESIGN.md fields) and logs every reconcile', async () => {
    const daemon = await startDaemon(h);
    const path = join(daemon.home, 'state', 'compute-host.json');
    expect(statSync(path).mode & 0o777).to.equal(0o600);
    const registry = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
    expect(Object.keys(registry).sort()).to.deep.equal(['argv', 'boot_id', 'build_sha', 'host_pid', 'host_start_time', 'started_at', 'supervisor_pid']);
    expect(registry['supervisor_pid']).to.equal(daemon.process.pid);
    expect(readCommandLine(registry['host_pid'] as number)).to.include('host');
    expect(logText(daemon.home)).to.include('"reconcile":"none"');
  });

  it('terminates the host a SIGKILLed supervisor left behind (reconcile: terminated)', async () => {
    const daemon = await startDaemon(h);
    const hostPid = (await status(h, daemon.home)).host.pid!;
    // Stopped, the orphan cannot notice its closed stdin and leave on its own: only reconcile ends it.
    process.kill(hostPid, 'SIGSTOP');
    daemon.process.kill('SIGKILL');
    await daemon.process.waitExit();
    const next = await startDaemon(h, [], {}, daemon.home);
    expect(logText(next.home)).to.match(new RegExp(`"reconcile":"terminated","pid":${hostPid}`));
    expect(existsSync(`/proc/${hostPid}`) && !readFileSync(`/proc/${hostPid}/stat`, 'utf8').includes(') Z')).to.equal(false);
    expect((await status(h, next.home)).host.pid).to.not.equal(hostPid);
  });

  it('rejects a hello from another home, terminates that host, and says why', async () => {
    const fake = join(REPO_ROOT, 'test', 'fixtures', 'fake-host.mjs');
    const { home, rejectedPid } = await startDaemonExpectingRejection(h, { TURNHOST_HOST_ENTRY: fake, TURNHOST_FAKE_HOME: '/somewhere/else' });
    expect(existsSync(`/proc/${rejectedPid}/cmdline`) && readFileSync(`/proc/${rejectedPid}/cmdline`, 'utf8') !== '').to.equal(false);
    expect((await status(h, home)).host.last_error).to.include('hello from another home: /somewhere/else');
  });

  it('rejects a hello from another build, terminates that host, and says why', async () => {
    const copy = h.tempDir('turnhost-other-build-');
    cpSync(join(REPO_ROOT, 'dist'), join(copy, 'dist'), { recursive: true });
    cpSync(join(REPO_ROOT, 'node_modules'), join(copy, 'node_modules'), { recursive: true, dereference: false, verbatimSymlinks: true });
    cpSync(join(REPO_ROOT, 'package.json'), join(copy, 'package.json'));
    appendFileSync(join(copy, 'dist', 'actors', 'host.js'), '\n// another build\n');
    const { home, rejectedPid } = await startDaemonExpectingRejection(h, { TURNHOST_HOST_ENTRY: join(copy, 'dist', 'bin', 'turnhost.js') });
    expect(existsSync(`/proc/${rejectedPid}/cmdline`) && readFileSync(`/proc/${rejectedPid}/cmdline`, 'utf8') !== '').to.equal(false);
    expect((await status(h, home)).host.last_error).to.match(/hello from another build: [0-9a-f]+ \(expected [0-9a-f]+\)/);
  });

  it('SIGTERM to the supervisor: the host shuts down in order, registry and socket removed, exit 0', async () => {
    const daemon = await startDaemon(h);
    const client = await TestClient.connect(daemon);
    await client.call('session.create', { session_id: 's1' });
    await client.call('prompt.submit', { session_id: 's1', text: 'before the stop' });
    await client.nextEvent('turn.end', 's1');
    client.close();
    const hostPid = (await status(h, daemon.home)).host.pid!;
    daemon.process.kill('SIGTERM');
    expect((await daemon.process.waitExit(15_000)).code).to.equal(0);
    expect(existsSync(join(daemon.home, 'turnhost.sock'))).to.equal(false);
    expect(existsSync(join(daemon.home, 'repl.sock'))).to.equal(false);
    expect(existsSync(join(daemon.home, 'state', 'compute-host.json'))).to.equal(false);
    expect(existsSync(`/proc/${hostPid}/cmdline`) && readFileSync(`/proc/${hostPid}/cmdline`, 'utf8') !== '').to.equal(false);
    const sessions = JSON.parse((await h.runCli(['sessions', '--home', daemon.home, '--json'])).stdout) as { status: string; end_reason: string }[];
    expect(sessions[0]).to.include({ status: 'finalized', end_reason: 'compute_host_shutdown' });
  });

  it('SIGKILLs a host that outlives its stop window (wait + 1 s)', async () => {
    const fake = join(REPO_ROOT, 'test', 'fixtures', 'fake-host.mjs');
    const daemon = await startDaemon(h, [], { TURNHOST_HOST_ENTRY: fake, TURNHOST_FAKE_IGNORE_SHUTDOWN: '1' });
    const started = performance.now();
    const stop = await h.runCli(['stop', '--home', daemon.home, '--wait', '1']);
    expect(stop.code).to.equal(0);
    const tookSec = (performance.now() - started) / 1000;
    expect(tookSec).to.be.within(1.9, 6);
    expect(logText(daemon.home)).to.include('SIGKILL to its group');
  });
});

/** A daemon whose host is rejected at hello: waits for the rejection, then for that host's exit, in the log. */
async function startDaemonExpectingRejection(h: Harness, env: NodeJS.ProcessEnv): Promise<{ home: string; rejectedPid: number }> {
  const home = h.tempDir();
  const daemon = new HostProcess(h.spawnCli(['daemon', '--home', home], { TURNHOST_LOG_LEVEL: 'info', ...env }));
  await daemon.logged(/rejected the compute host/, 15_000);
  const rejectedPid = Number(/"pid":(\d+),"msg":"rejected the compute host/.exec(daemon.stderr)![1]);
  await daemon.logged(/compute host exited/, 15_000);
  return { home, rejectedPid };
}
