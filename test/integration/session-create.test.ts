// A created session exists at once (issue: a page's "New session" then a reload lost it): it is
// listed, resumable from another connection, and there after the daemon restarts.
import { expect } from 'chai';
import { startDaemon, TestClient } from '../helpers/daemon.js';
import { Harness } from '../helpers/processes.js';

describe('session.create stores the session at once (real daemon)', function () {
  this.timeout(30_000);
  const h = new Harness();
  afterEach(() => h.cleanup());

  it('is listed, resumable on another connection, and survives a daemon restart, before any turn', async () => {
    const daemon = await startDaemon(h);
    const a = await TestClient.connect(daemon);
    expect(await a.call('session.create', { session_id: 'fresh1' })).to.deep.equal({ session_id: 'fresh1', session_key: 'fresh1' });
    const listed = await a.call<{ sessions: { session_id: string; status: string; message_count: number }[] }>('session.list');
    expect(listed.sessions.map((s) => [s.session_id, s.status, s.message_count])).to.deep.equal([['fresh1', 'active', 0]]);
    const b = await TestClient.connect(daemon);
    expect(await b.call('session.resume', { session_id: 'fresh1' })).to.include({ session_id: 'fresh1', running: false });
    expect(await a.call('session.create', { session_id: 'fresh1' }), 'creating it again changes nothing').to.deep.equal({ session_id: 'fresh1', session_key: 'fresh1' });
    a.close();
    b.close();
    expect((await h.runCli(['stop', '--home', daemon.home])).code).to.equal(0);
    await daemon.process.waitExit();

    const again = await startDaemon(h, [], {}, daemon.home);
    const c = await TestClient.connect(again);
    expect(await c.call('session.resume', { session_id: 'fresh1' })).to.include({ session_id: 'fresh1' });
    await c.call('prompt.submit', { session_id: 'fresh1', text: 'first words' });
    await c.nextEvent('turn.end', 'fresh1');
    expect(c.reply('fresh1')).to.equal('first words');
    c.close();
  });
});
