import { expect } from 'chai';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { realProbe, readCommandLine, readStartTime } from '../../persistence/proc.js';
import { reconcile, writeRegistry, type ProcessProbe } from '../../persistence/registry.js';

/** The real probe, except that terminate is recorded instead of done. */
function recordingProbe(): ProcessProbe & { terminated: number[] } {
  const terminated: number[] = [];
  const real = realProbe({ graceMs: 100, killWaitMs: 100 });
  return { ...real, terminated, terminate: async (pid) => void terminated.push(pid) };
}

describe('registry and reconcile', () => {
  let dir: string;
  let path: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'turnhost-registry-'));
    path = join(dir, 'state', 'compute-host.json');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('says none when there is no registry', async () => {
    expect(await reconcile(path, recordingProbe())).to.deep.equal({ result: 'none' });
  });

  it('writes the registry atomically with mode 0600', () => {
    writeRegistry(path, { host_pid: 1, boot_id: 'b', build_sha: 's', argv: ['node', 'x'], started_at: 'now', host_start_time: 5, supervisor_pid: 2 });
    expect(statSync(path).mode & 0o777).to.equal(0o600);
    expect(existsSync(`${path}.tmp-${process.pid}`)).to.equal(false);
  });

  it('ignores a live process that is not a turnhost host, never signals it, and removes the registry (the seed test)', async () => {
    writeRegistry(path, { host_pid: process.pid, boot_id: 'stale', build_sha: 's', argv: [process.execPath, '/nowhere/dist/bin/turnhost.js', 'host'], started_at: 'then', host_start_time: readStartTime(process.pid)!, supervisor_pid: 1 });
    const probe = recordingProbe();
    const outcome = await reconcile(path, probe);
    expect(outcome.result).to.equal('pid-reuse-ignored');
    expect(probe.terminated).to.deep.equal([]);
    expect(existsSync(path)).to.equal(false);
  });

  it('ignores a process whose command line matches but whose start time does not', async () => {
    const cmdline = readCommandLine(process.pid)!;
    writeRegistry(path, { host_pid: process.pid, boot_id: 'b', build_sha: 's', argv: [cmdline[0]!, cmdline[1]!, 'host'], started_at: 'then', host_start_time: -42, supervisor_pid: 1 });
    const probe = recordingProbe();
    const patched: ProcessProbe = { ...probe, commandLine: () => [...cmdline, 'host'] };
    expect((await reconcile(path, patched)).detail).to.match(/start time differs/);
    expect(probe.terminated).to.deep.equal([]);
  });

  it('says not-running for pid 2^63, a missing pid and a dead pid, and removes the registry', async () => {
    for (const host_pid of [2 ** 63, 0, -5, 'seven', null]) {
      writeRegistry(path, { host_pid, boot_id: 'b' } as never);
      expect((await reconcile(path, recordingProbe())).result, String(host_pid)).to.equal('not-running');
      expect(existsSync(path)).to.equal(false);
    }
    writeRegistry(path, { host_pid: 2 ** 22 + 12345, boot_id: 'b' } as never);
    expect((await reconcile(path, recordingProbe())).result).to.equal('not-running');
  });

  it('says invalid-registry for a file that is not JSON, and removes it', async () => {
    writeRegistry(path, {} as never);
    writeFileSync(path, 'not json {');
    const outcome = await reconcile(path, recordingProbe());
    expect(outcome.result).to.equal('invalid-registry');
    expect(existsSync(path)).to.equal(false);
  });

  it('terminates a live process identified as the recorded host', async () => {
    const cmdline = readCommandLine(process.pid)!;
    writeRegistry(path, { host_pid: process.pid, boot_id: 'b', build_sha: 's', argv: [cmdline[0]!, cmdline[1]!, 'host'], started_at: 'then', host_start_time: readStartTime(process.pid)!, supervisor_pid: 1 });
    const probe = recordingProbe();
    const patched: ProcessProbe = { ...probe, commandLine: () => [...cmdline, 'host'] };
    expect((await reconcile(path, patched)).result).to.equal('terminated');
    expect(probe.terminated).to.deep.equal([process.pid]);
  });
});
