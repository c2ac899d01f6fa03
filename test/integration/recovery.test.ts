import { expect } from 'chai';
import { storeRows } from '../helpers/test-store.js';
import { Harness } from '../helpers/processes.js';

const HISTORY_AGENT = 'test/fixtures/history-agent.mjs';


describe('recovery after a crash (real host processes)', function () {
  this.timeout(60_000);
  const h = new Harness();
  afterEach(() => h.cleanup());

  it('records every boot; after kill -9, running turns are lost, active sessions retained (crash), open requests expired', async () => {
    const home = h.tempDir();
    const first = await h.startHost(home);
    await first.turn('done', 'r1', 'finished before the crash');
    first.send({ type: 'turn.start', sid: 'asking', request_id: 'r2', text: '/ask anyone?' });
    await first.next('rpc', { where: (f) => typeof (f['message'] as { id?: unknown }).id === 'string' });
    first.kill('SIGKILL');
    await first.waitExit();
    const second = await h.startHost(home);
    const hello = second.frames[0]!;
    expect((hello['recovered'] as { sid: string; reason: string }[]).map((r) => `${r.sid}:${r.reason}`).sort()).to.deep.equal(['asking:crash', 'done:crash']);
    const boots = await storeRows<{ pid: number; ended_at: number | null; end_reason: string | null }>(home, 'SELECT pid, ended_at, end_reason FROM boots ORDER BY started_at');
    expect(boots.map((b) => [b.pid, b.ended_at !== null, b.end_reason])).to.deep.equal([
      [first.pid, true, 'crash'],
      [second.pid, false, null],
    ]);
    expect(await storeRows(home, "SELECT status FROM turns WHERE sid = 'asking'")).to.deep.equal([{ status: 'lost' }]);
    expect(await storeRows(home, "SELECT status FROM turns WHERE sid = 'done'")).to.deep.equal([{ status: 'completed' }]);
    expect(await storeRows(home, 'SELECT status, reason FROM server_requests')).to.deep.equal([{ status: 'expired', reason: 'host died' }]);
    expect(await storeRows(home, "SELECT status, retained_reason FROM sessions WHERE sid = 'done'")).to.deep.equal([{ status: 'retained', retained_reason: 'crash' }]);
  });

  it('brings a recovered session back on first use with its whole history; the agent sees it; it is active again', async () => {
    const home = h.tempDir();
    const first = await h.startHost(home, ['--agent', HISTORY_AGENT]);
    await first.turn('s1', 'r1', 'one');
    await first.turn('s1', 'r2', 'two');
    first.kill('SIGKILL');
    await first.waitExit();
    const second = await h.startHost(home, ['--agent', HISTORY_AGENT]);
    const end = await second.turn('s1', 'r3', 'three');
    expect(end).to.include({ type: 'turn.end', message_count: 6 });
    const reply = second.all('rpc', (f) => JSON.stringify(f['message']).includes('message.complete'))[0]!;
    expect(JSON.stringify(reply['message'])).to.include('seen 4; last: assistant: seen 2; last: assistant: seen 0; last: none');
    const sessions = JSON.parse((await h.runCli(['sessions', '--home', home, '--json'])).stdout) as { status: string; retained_reason: string | null }[];
    expect(sessions[0]).to.include({ status: 'active', retained_reason: null });
    expect(second.frames[0]!['recovered']).to.deep.equal([{ sid: 's1', session_key: 's1', reason: 'crash' }]);
  });
});
