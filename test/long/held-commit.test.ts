// The durability rules with the commit held back (issue: the cost of a turn, point 6): another
// connection holds the database's write lock, so the host's commit waits. No turn.started may
// leave before its prompt is committed (rule 1), and no turn.end before the turn's rows are
// (rule 2), whatever the timing: a frame written ahead of its commit shows while the lock is held.
import { expect } from 'chai';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { readDatabase } from '../helpers/database.js';
import { Harness, type HostProcess } from '../helpers/processes.js';

/** Longer than a turn takes to reach its commit, shorter than the host's busy timeout (5 s). */
const HOLD_MS = 1500;
/**
 * Past the host's busy timeout twice (5 s each): a group that fails is tried again unit by unit,
 * so only then does the turn's commit fail for good.
 */
const PAST_BUSY_TIMEOUTS_MS = 11_000;

/** Takes the database's write lock from a second connection, as another writer would. */
function holdWriteLock(home: string): () => void {
  const db = new Database(join(home, 'turnhost.db'));
  db.exec('BEGIN IMMEDIATE');
  return () => {
    db.exec('ROLLBACK');
    db.close();
  };
}

function heldFor(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

const framesOf = (host: HostProcess, type: string, requestId: string) => host.all(type, (f) => f['request_id'] === requestId);

describe('the durability rules with the commit held back (real host, a second connection holding the lock)', function () {
  this.timeout(30_000);
  const h = new Harness();
  afterEach(() => h.cleanup());

  it('rule 1: no turn.started leaves before its prompt is committed', async () => {
    const home = h.tempDir();
    const host = await h.startHost(home);
    host.send({ type: 'turn.start', sid: 's1', request_id: 'warm', text: 'warm up' });
    await host.next('turn.end', { where: (f) => f['request_id'] === 'warm' });
    const release = holdWriteLock(home);
    host.send({ type: 'turn.start', sid: 's1', request_id: 'r1', text: 'held prompt' });
    await heldFor(HOLD_MS);
    expect(framesOf(host, 'turn.started', 'r1'), 'turn.started while its commit was held').to.have.length(0);
    release();
    await host.next('turn.started', { where: (f) => f['request_id'] === 'r1' });
    const prompts = readDatabase(home, (db) => db.prepare("SELECT content FROM messages WHERE sid = 's1' AND role = 'user' ORDER BY seq").all());
    expect(prompts).to.deep.equal([{ content: 'warm up' }, { content: 'held prompt' }]);
  });

  it('rule 2: no turn.end leaves before the turn\'s rows are committed', async () => {
    const home = h.tempDir();
    const host = await h.startHost(home);
    host.send({ type: 'turn.start', sid: 's1', request_id: 'r1', text: 'held reply\n/sleep 0.3' });
    await host.next('turn.started', { where: (f) => f['request_id'] === 'r1' });
    const release = holdWriteLock(home);
    await heldFor(HOLD_MS);
    expect(framesOf(host, 'turn.end', 'r1'), 'turn.end while its commit was held').to.have.length(0);
    release();
    const end = await host.next('turn.end', { where: (f) => f['request_id'] === 'r1' });
    expect(end['interrupted']).to.equal(false);
    const turn = readDatabase(home, (db) => db.prepare('SELECT status FROM turns').get());
    expect(turn).to.deep.equal({ status: 'completed' });
    const replies = readDatabase(home, (db) => db.prepare("SELECT content FROM messages WHERE role = 'assistant'").all());
    expect(replies).to.deep.equal([{ content: 'held reply' }]);
  });

  it('rule 2, held past the busy timeouts: the turn ends in turn.error (storage), never in a turn.end whose rows are not there', async () => {
    const home = h.tempDir();
    const host = await h.startHost(home);
    host.send({ type: 'turn.start', sid: 's1', request_id: 'r1', text: 'never stored\n/sleep 0.3' });
    await host.next('turn.started', { where: (f) => f['request_id'] === 'r1' });
    const release = holdWriteLock(home);
    await heldFor(PAST_BUSY_TIMEOUTS_MS);
    release();
    const end = await host.ended('r1');
    expect(end).to.include({ type: 'turn.error', reason: 'storage' });
    expect(framesOf(host, 'turn.end', 'r1')).to.have.length(0);
    host.send({ type: 'turn.start', sid: 's1', request_id: 'r2', text: 'after the lock' });
    await host.next('turn.end', { where: (f) => f['request_id'] === 'r2' });
    const replies = readDatabase(home, (db) => db.prepare("SELECT content FROM messages WHERE role = 'assistant' ORDER BY seq").all());
    expect(replies).to.deep.equal([{ content: 'after the lock' }]);
  });
});
