// The package as a user gets it: `npm pack`, then `npm install -g` of the tarball into a
// temporary prefix, then the installed command, with no repository around it. Slow (npm builds
// better-sqlite3), so it is its own script (`npm run test:package`), run by CI before `npm test`.
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Harness, REPO_ROOT } from '../helpers/processes.js';

const run = promisify(execFile);
const INSTALL_TIMEOUT_MS = 5 * 60_000;

describe('the installable package (npm pack, npm install -g)', function () {
  this.timeout(INSTALL_TIMEOUT_MS + 60_000);
  const h = new Harness();
  after(() => h.cleanup());

  it('installs from its tarball and runs: --version, and a chat turn in a new home', async () => {
    const dir = h.tempDir('turnhost-package-');
    const version = (JSON.parse((await run('npm', ['pkg', 'get', 'version'], { cwd: REPO_ROOT })).stdout) as string).trim();
    await run('npm', ['pack', '--pack-destination', dir], { cwd: REPO_ROOT, timeout: INSTALL_TIMEOUT_MS });
    const tarball = join(dir, readdirSync(dir).find((f) => f.endsWith('.tgz'))!);
    const listing = (await run('tar', ['-tzf', tarball])).stdout.split('\n').filter((l) => l !== '');
    const top = new Set(listing.map((path) => path.split('/')[1]));
    expect([...top].sort()).to.deep.equal(['LICENSE', 'README.md', 'dist', 'docs', 'package.json']);
    expect(listing).to.include.members(['package/dist/client/index.js', 'package/dist/client/index.d.ts', 'package/docs/turnhost.service']);
    expect(listing.some((path) => path.endsWith('.map') || path.includes('/test/'))).to.equal(false);

    const prefix = join(dir, 'prefix');
    // Outside the repository, so nothing of it can be picked up by accident.
    await run('npm', ['install', '-g', '--prefix', prefix, tarball], { cwd: dir, timeout: INSTALL_TIMEOUT_MS });
    const turnhost = join(prefix, 'bin', 'turnhost');
    const env = { ...process.env, TURNHOST_HOME: join(dir, 'unused-home') };
    expect((await run(turnhost, ['--version'], { cwd: dir, env })).stdout.trim()).to.equal(version);
    const home = join(dir, 'home');
    const chat = await run(turnhost, ['chat', '--home', home, 'hello'], { cwd: dir, env, timeout: 60_000 });
    expect(chat.stdout).to.equal('hello\n');
    const stop = await run(turnhost, ['stop', '--home', home], { cwd: dir, env, timeout: 60_000 });
    expect(stop.stdout).to.include('stopped');
    const client = join(prefix, 'lib', 'node_modules', 'turnhost', 'dist', 'client', 'index.js');
    const exported = await run(process.execPath, ['--input-type=module', '-e', `const m = await import(${JSON.stringify(client)}); console.log(typeof m.connect)`], { cwd: dir });
    expect(exported.stdout.trim()).to.equal('function');
  });
});
