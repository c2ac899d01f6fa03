import { expect } from 'chai';
import { storeRows } from '../helpers/test-store.js';
import { Harness, type HostProcess } from '../helpers/processes.js';

const STREAMING_AGENT = 'test/fixtures/streaming-agent.mjs';

function turnRows(home: string, sid: string): Promise<{ status: string }[]> {
  return storeRows(home, 'SELECT status FROM turns WHERE sid = ? ORDER BY started_at', [sid]);
}

async function killNow(host: HostProcess): Promise<void> {
  host.kill('SIGKILL');
  expect((await host.waitExit()).signal).to.equal('SIGKILL');
}

describe('host: persistence', () => {
  const h = new Harness();
  afterEach(() => h.cleanup());

  it('commits the prompt and a running turn row before turn.started (rule 1)', async () => {
    const home = h.tempDir();
    const host = await h.startHost(home);
    host.send({ type: 'turn.start', sid: 's1', request_id: 'r1', text: 'remember me\n/sleep 30' });
    await host.next('turn.started');
    await killNow(host);
    const out = await h.runCli(['history', 's1', '--home', home, '--json']);
    expect(JSON.parse(out.stdout)).to.deep.equal([{ seq: 0, role: 'user', content: 'remember me\n/sleep 30', turn_id: JSON.parse(out.stdout)[0].turn_id, by: 'owner' }]);
    expect(await turnRows(home, 's1')).to.deep.equal([{ status: 'running' }]);
  });

  it('loses nothing of a turn whose turn.end was read before kill -9 (rule 2)', async () => {
    const home = h.tempDir();
    const host = await h.startHost(home);
    host.send({ type: 'turn.start', sid: 's1', request_id: 'r1', text: 'keep this turn' });
    const end = await host.next('turn.end');
    await killNow(host);
    const out = await h.runCli(['history', 's1', '--home', home, '--json']);
    expect(out.code).to.equal(0);
    const history = JSON.parse(out.stdout) as { seq: number; role: string; content: string; turn_id: string }[];
    expect(history).to.deep.equal([
      { seq: 0, role: 'user', content: 'keep this turn', turn_id: end['turn_id'], by: 'owner' },
      { seq: 1, role: 'assistant', content: 'keep this turn', turn_id: end['turn_id'] },
    ]);
    expect(await turnRows(home, 's1')).to.deep.equal([{ status: 'completed' }]);
  });

  it('prints sessions and history in the formats of PROTOCOL.md §3, while a host is writing', async () => {
    const home = h.tempDir();
    const host = await h.startHost(home, ['--agent', STREAMING_AGENT]);
    host.send({ type: 'turn.start', sid: 'done', request_id: 'r1', text: 'hi' });
    await host.next('turn.end');
    host.send({ type: 'turn.start', sid: 'busy', request_id: 'r2', text: 'stream 100000 1' });
    await host.next('turn.started');
    const sessions = await h.runCli(['sessions', '--home', home, '--json']);
    expect(sessions.code, sessions.stderr).to.equal(0);
    const list = JSON.parse(sessions.stdout) as Record<string, unknown>[];
    expect(list.map((s) => s['session_id']).sort()).to.deep.equal(['busy', 'done']);
    for (const s of list) {
      expect(Object.keys(s).sort()).to.deep.equal(
        ['agent', 'end_reason', 'history_version', 'message_count', 'model', 'retained_reason', 'session_id', 'session_key', 'status', 'updated_at'],
      );
      expect(s['status']).to.equal('active');
      expect(s['agent'], 'its agent, the catalogue\'s name (AGENT.md §8)').to.equal('streaming-agent');
      expect(s['model']).to.equal(null);
      expect(Date.parse(s['updated_at'] as string)).to.not.be.NaN;
    }
    const history = await h.runCli(['history', 'done', '--home', home, '--json']);
    const rows = JSON.parse(history.stdout) as Record<string, unknown>[];
    expect(rows.map((r) => Object.keys(r).sort())).to.deep.equal([
      ['by', 'content', 'role', 'seq', 'turn_id'], // a prompt says who submitted it (PROTOCOL.md §5.6)
      ['content', 'role', 'seq', 'turn_id'],
    ]);
    const active = await h.runCli(['sessions', '--home', home, '--json', '--status', 'finalized']);
    expect(JSON.parse(active.stdout)).to.deep.equal([]);
    const text = await h.runCli(['sessions', '--home', home]);
    expect(text.stdout).to.match(/^SESSION\s+STATUS/);
  });

  it('refuses a second host on a home whose host runs, which keeps running; the home is free again once it exits', async () => {
    const home = h.tempDir();
    const first = await h.startHost(home);
    first.send({ type: 'turn.start', sid: 's1', request_id: 'r1', text: 'still mine\n/sleep 30' });
    await first.next('turn.started');
    const second = await h.runCli(['host', '--home', home]);
    expect(second.code).to.equal(1);
    expect(second.stderr.trim()).to.equal(`turnhost host: another compute host is running for ${home}`);
    expect(await turnRows(home, 's1')).to.deep.equal([{ status: 'running' }]); // not declared lost
    first.send({ type: 'interrupt', sid: 's1', request_id: 'i1' });
    expect((await first.next('turn.end'))['interrupted']).to.equal(true);
    await killNow(first);
    const third = await h.startHost(home);
    expect(third.frames[0]!['recovered']).to.deep.equal([{ sid: 's1', session_key: 's1', reason: 'crash' }]);
  });

  it('exits 4 with a clear message for the history of an unknown session', async () => {
    const home = h.tempDir();
    const out = await h.runCli(['history', 'ghost', '--home', home, '--json']);
    expect(out.code).to.equal(4);
    expect(out.stdout).to.equal('');
    expect(out.stderr.trim()).to.equal('turnhost history: unknown session: ghost');
    const empty = await h.runCli(['sessions', '--home', home, '--json']);
    expect(empty.code).to.equal(0);
    expect(JSON.parse(empty.stdout)).to.deep.equal([]);
  });

  it('commits what a running turn appended on session.save, and the rest at its end', async () => {
    const home = h.tempDir();
    const host = await h.startHost(home, ['--agent', STREAMING_AGENT]);
    host.send({ type: 'turn.start', sid: 's1', request_id: 'r1', text: 'stream 3 10 30000' });
    await host.next('turn.started');
    await host.next('rpc', { where: (f) => JSON.stringify(f['message']).includes('part 3 ') });
    host.send({ type: 'control', sid: 's1', request_id: 'save', route_name: 'session.save' });
    const saved = await host.next('control.ack');
    expect(saved['result']).to.deep.equal({ saved: 3 });
    expect(saved['message_count']).to.equal(4);
    const stored = JSON.parse((await h.runCli(['history', 's1', '--home', home, '--json'])).stdout) as { content: string }[];
    expect(stored.map((m) => m.content)).to.deep.equal(['stream 3 10 30000', 'part 1', 'part 2', 'part 3']);
    host.send({ type: 'interrupt', sid: 's1', request_id: 'stop' });
    const end = await host.next('turn.end');
    expect(end).to.include({ interrupted: true, message_count: 5 });
    const all = JSON.parse((await h.runCli(['history', 's1', '--home', home, '--json'])).stdout) as { seq: number; content: string }[];
    expect(all.map((m) => m.seq)).to.deep.equal([0, 1, 2, 3, 4]);
    expect(all[4]!.content).to.equal('streamed 3');
  });
});
