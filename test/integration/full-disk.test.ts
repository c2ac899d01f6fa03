import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readDatabase } from '../helpers/database.js';
import { Harness } from '../helpers/processes.js';

const DISK_MIB = 8;

/** A small tmpfs of the test's own; false (and why) where this machine refuses the mount. */
function mountSmallDisk(dir: string): string | null {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${DISK_MIB}m,mode=0700`, 'tmpfs', dir], { stdio: 'pipe' });
    return null;
  } catch (err) {
    return String((err as { stderr?: Buffer }).stderr ?? (err as Error).message).trim();
  }
}

/** Writes a filler file until the disk says it is full. */
function fillDisk(path: string): void {
  const fd = openSync(path, 'w');
  const chunk = Buffer.alloc(64 * 1024, 1);
  try {
    for (;;) writeSync(fd, chunk);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
  } finally {
    closeSync(fd);
  }
}


describe('a full disk (real host on a small tmpfs)', function () {
  this.timeout(60_000);
  const h = new Harness();
  let disk = '';
  /** A home on a fresh small disk, or the test is skipped, saying why. */
  function smallDisk(test: Mocha.Context): { home: string; filler: string } {
    disk = mkdtempSync(join(tmpdir(), 'turnhost-disk-'));
    const refused = mountSmallDisk(disk);
    if (refused !== null) {
      console.log(`      (skipped: this machine refuses to mount a tmpfs: ${refused})`);
      test.skip();
    }
    const home = join(disk, 'home');
    mkdirSync(home, { mode: 0o700 });
    return { home, filler: join(disk, 'filler') };
  }

  // The processes go first (they hold files on the disk), then the mount, then its folder.
  afterEach(async () => {
    await h.cleanup();
    if (disk) {
      execFileSync('umount', ['-l', disk], { stdio: 'ignore' });
      rmSync(disk, { recursive: true, force: true });
    }
    disk = '';
  });

  it('fails the turn with reason storage, forgets what it made (its prompt stays), keeps reads working, and works again once space returns', async function () {
    const { home, filler } = smallDisk(this);
    const host = await h.startHost(home);
    expect((await host.turn('s', 't1', 'first words')).type).to.equal('turn.end');

    // The prompt is stored at the start; the disk fills while the agent works; the end cannot be stored.
    const big = Array.from({ length: 30_000 }, (_, i) => `w${i}`).join(' ');
    const t2Prompt = `${big}\n/sleep 0.5`;
    host.send({ type: 'turn.start', sid: 's', request_id: 't2', text: t2Prompt });
    await host.next('turn.started', { where: (f) => f['request_id'] === 't2' });
    fillDisk(filler);
    const failed = await host.next('turn.error', { where: (f) => f['request_id'] === 't2' });
    expect(failed['reason']).to.equal('storage');
    expect(String(failed['message'])).to.include('the disk is full');
    const startFails = await host.turn('s', 't3', 'while the disk is full '.repeat(2000));
    expect(startFails).to.include({ type: 'turn.error', reason: 'storage' });

    // Reads go on while the disk is full.
    const sessions = await h.runCli(['sessions', '--home', home, '--json']);
    expect(sessions.code, sessions.stderr).to.equal(0);
    const history = await h.runCli(['history', 's', '--home', home]);
    expect(history.code, history.stderr).to.equal(0);
    expect(history.stdout).to.include('[0] user: first words');
    const repl = h.spawnCli(['repl', '--offline', '--home', home]);
    repl.stdin!.end(".sql SELECT count(*) AS turns_stored FROM turns\n");
    let replOut = '';
    repl.stdout!.on('data', (c: Buffer) => (replOut += c.toString()));
    await new Promise((resolve) => repl.once('close', resolve));
    expect(replOut).to.match(/turns_stored\s*\n\s*2\b/);

    rmSync(filler);
    expect((await host.turn('s', 't4', 'after the space came back')).type).to.equal('turn.end');
    host.send({ type: 'shutdown', request_id: 'bye', wait: 1 });
    const ack = await host.next('shutdown.ack');
    expect(ack['finalized']).to.deep.equal(['s']);
    expect(ack).to.not.have.property('error');
    expect((await host.waitExit()).code).to.equal(0);

    const rows = readDatabase(home, (db) => ({
      messages: db.prepare('SELECT role, content, turn_id FROM messages WHERE sid = ? ORDER BY seq').all('s') as { role: string; content: string; turn_id: string }[],
      turns: db.prepare('SELECT request_id, status FROM turns ORDER BY started_at, request_id').all() as { request_id: string; status: string }[],
    }));
    // t2's prompt stays (it was stored and acknowledged at its start); nothing its turn made does.
    expect(rows.messages.map((m) => m.content)).to.deep.equal(['first words', 'first words', t2Prompt, 'after the space came back', 'after the space came back']);
    expect(rows.turns).to.deep.equal([
      { request_id: 't1', status: 'completed' },
      { request_id: 't2', status: 'failed' },
      { request_id: 't4', status: 'completed' },
    ]);
  });

  it('a queued prompt whose start meets a full disk fails once, stays at the head of its queue, and runs a second later once space returns', async function () {
    const { home, filler } = smallDisk(this);
    const host = await h.startHost(home);
    const big = Array.from({ length: 30_000 }, (_, i) => `w${i}`).join(' ');
    host.send({ type: 'turn.start', sid: 'q', request_id: 'running', text: `${big}\n/sleep 0.5` });
    await host.next('turn.started', { where: (f) => f['request_id'] === 'running' });
    const queuedText = 'queued while the disk fills '.repeat(2000);
    host.send({ type: 'turn.start', sid: 'q', request_id: 'queued', text: queuedText, on_busy: 'queue' });
    await host.next('turn.queued', { where: (f) => f['request_id'] === 'queued' });
    fillDisk(filler);
    expect(await host.next('turn.error', { where: (f) => f['request_id'] === 'running' })).to.include({ reason: 'storage' });
    const failed = await host.next('turn.error', { where: (f) => f['request_id'] === 'queued' });
    expect(failed).to.include({ reason: 'storage' });
    rmSync(filler);
    // The queue waits 1 s before it tries its head again (it used to try at once, failing in a
    // loop: 611 turn.errors in half a second). With the space back at once, the next try starts it.
    const retried = await host.nextOf(['turn.started', 'turn.error'], { where: (f) => f['request_id'] === 'queued' });
    expect(retried).to.include({ type: 'turn.started' });
    expect((Number(retried['host_ns']) - Number(failed['host_ns'])) / 1e6, 'ms between the failure and the retry').to.be.at.least(900);
    expect(await host.ended('queued')).to.include({ type: 'turn.end' });
    const stored = readDatabase(home, (db) => ({
      prompts: db.prepare("SELECT content FROM messages WHERE sid = 'q' AND role = 'user' ORDER BY seq").all() as { content: string }[],
      queued: db.prepare("SELECT count(*) AS n FROM queue WHERE sid = 'q'").get() as { n: number },
    }));
    // What the turn whose end failed made is forgotten, its prompt kept (as in the test above); the queued prompt ran once.
    expect(stored.prompts.map((p) => p.content)).to.deep.equal([`${big}\n/sleep 0.5`, queuedText]);
    expect(stored.queued.n).to.equal(0);
  });

  it('a shutdown whose flush meets a full disk keeps every session for recovery and says so in its ack', async function () {
    const { home, filler } = smallDisk(this);
    const host = await h.startHost(home);
    expect((await host.turn('a', 'r1', 'kept')).type).to.equal('turn.end');
    fillDisk(filler);
    host.send({ type: 'shutdown', request_id: 'bye', wait: 1 });
    const ack = await host.next('shutdown.ack');
    expect(ack['finalized']).to.deep.equal([]);
    expect(ack['retained']).to.deep.equal(['a']);
    expect(String(ack['error'])).to.include('the disk is full').and.include('kept for recovery');
    await host.waitExit();
    rmSync(filler);
    const again = await h.startHost(home);
    expect(again.frames[0]!['recovered']).to.deep.include({ sid: 'a', session_key: 'a', reason: 'crash' });
    expect((await again.turn('a', 'r2', 'still here')).type).to.equal('turn.end');
    const stored = readDatabase(home, (db) => db.prepare("SELECT count(*) AS n FROM turns WHERE status = 'running'").get() as { n: number });
    expect(stored.n).to.equal(0);
  });
});
