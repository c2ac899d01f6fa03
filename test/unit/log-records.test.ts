import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, rmSync, statSync, closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { appendLogRecord, LogFile } from '../../persistence/log.js';
import { REPO_ROOT } from '../helpers/processes.js';

describe('log records', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'turnhost-log-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('adds a newline when missing, and creates the file with mode 0600', () => {
    const path = join(dir, 'logs', 'a.log');
    appendLogRecord(path, 'one');
    appendLogRecord(path, 'two\n');
    appendLogRecord(path, { three: 3 });
    expect(readFileSync(path, 'utf8')).to.equal('one\ntwo\n{"three":3}\n');
    expect(statSync(path).mode & 0o777).to.equal(0o600);
  });

  it('drops a record written after close (a late log line at exit), and never into the file that took its descriptor', () => {
    const log = new LogFile(join(dir, 'daemon.log'));
    log.write('before\n');
    log.close();
    const other = join(dir, 'other');
    const fd = openSync(other, 'w'); // likely the descriptor number the log had
    try {
      expect(() => log.write('after\n')).to.not.throw();
      log.close();
    } finally {
      closeSync(fd);
    }
    expect(readFileSync(join(dir, 'daemon.log'), 'utf8')).to.equal('before\n');
    expect(readFileSync(other, 'utf8')).to.equal('');
  });

  it('keeps 32 concurrent writers in separate processes from interleaving (the seed test)', async function () {
    this.timeout(30_000);
    const path = join(dir, 'agent.log');
    const module = join(REPO_ROOT, 'dist', 'persistence', 'log.js');
    const writer = (i: number) =>
      new Promise<number | null>((resolve) => {
        const id = String(i).padStart(3, '0');
        const script = `import('${module}').then((m) => m.appendLogRecord(${JSON.stringify(path)}, 'line-${id}-' + 'x'.repeat(2000)))`;
        spawn(process.execPath, ['-e', script], { stdio: 'ignore' }).once('exit', resolve);
      });
    const codes = await Promise.all(Array.from({ length: 32 }, (_, i) => writer(i)));
    expect(codes.every((c) => c === 0)).to.equal(true);
    const lines = readFileSync(path, 'utf8').split('\n').filter((l) => l !== '');
    expect(lines).to.have.length(32);
    expect(lines.map((l) => l.split('-')[1]).sort()).to.deep.equal(Array.from({ length: 32 }, (_, i) => String(i).padStart(3, '0')));
    expect(lines.every((l) => l.endsWith('x'.repeat(2000)))).to.equal(true);
  });

  it('rotates by size: the file becomes .1, .1 becomes .2, three old files kept, every record whole', () => {
    const path = join(dir, 'turnhost.log');
    const log = new LogFile(path, 1000);
    const record = (n: number) => ({ n, pad: 'x'.repeat(80) });
    for (let n = 0; n < 60; n++) log.append(record(n));
    log.close();
    const files = [path, `${path}.1`, `${path}.2`, `${path}.3`];
    const lines = files.map((f) => readFileSync(f, 'utf8').trimEnd().split('\n').map((l) => (JSON.parse(l) as { n: number }).n));
    for (const f of files) expect(statSync(f).size, f).to.be.at.most(1000);
    expect(() => statSync(`${path}.4`)).to.throw(/ENOENT/);
    // The newest records in the file, the oldest kept in .3; the four files hold a run of consecutive records.
    expect(lines[0]!.at(-1)).to.equal(59);
    expect(lines.reverse().flat()).to.deep.equal(Array.from({ length: lines.flat().length }, (_, i) => 60 - lines.flat().length + i));
  });
});
