// Branches (PROTOCOL.md §2.2) against the real daemon and host on a real SQLite file: a fork at any
// ended turn (while the source runs too) that shares the source's line; rewind, retry and edit
// that supersede and never delete; what the agent sees after each (an agent that says what history
// it was given); `history --all`; the fork's line unchanged by a rewind of its source, even into
// the prefix they share; all of it the same after the daemon restarts.
import { expect } from 'chai';
import { endedTurn, historyOf, hostPid, hostReady, rpcCode, startDaemon, TestClient, type Daemon, type HistoryMessage } from '../helpers/daemon.js';
import { HttpAgent } from '@ag-ui/client';
import { connect } from '../../client/index.js';
import { Editor } from '../helpers/editor.js';
import { httpRequest } from '../helpers/http.js';
import { Harness, stoppedWithin } from '../helpers/processes.js';
import { storeRows } from '../helpers/test-store.js';

const HISTORY_AGENT = ['--agent', 'test/fixtures/history-agent.mjs'];


describe('branches: fork, rewind, retry, edit (real daemon, real host, SQLite)', function () {
  this.timeout(60_000);
  const h = new Harness();
  afterEach(() => h.cleanup());

  const turn = endedTurn;
  const history = historyOf;
  const code = rpcCode;
  const lines = (messages: readonly HistoryMessage[]) => messages.map((m) => `${m.superseded ? '~' : ''}${m.role}: ${m.content}`);

  async function threeTurns(): Promise<{ daemon: Daemon; client: TestClient; turns: string[] }> {
    const daemon = await startDaemon(h, HISTORY_AGENT);
    const client = await TestClient.connect(daemon);
    await client.call('session.create', { session_id: 'a' });
    const turns = [];
    for (const text of ['one', 'two', 'three']) turns.push(await turn(client, 'a', text));
    return { daemon, client, turns };
  }

  it('a fork at a turn shares the line up to it: the agent of the fork sees that line, the source goes on unchanged; listed both ways', async () => {
    const { client, turns } = await threeTurns();
    const forked = await client.call<{ session_id: string; forked_from: unknown }>('session.fork', { session_id: 'a', at_turn_id: turns[1], new_session_id: 'f' });
    expect(forked).to.deep.equal({ session_id: 'f', forked_from: { session_id: 'a', turn_id: turns[1] } });
    expect(lines(await history(client, 'f'))).to.deep.equal(['user: one', 'assistant: seen 0; last: none', 'user: two', 'assistant: seen 2; last: assistant: seen 0; last: none']);
    await turn(client, 'f', 'in the fork');
    expect((await history(client, 'f')).at(-1)!.content, 'the fork\'s agent sees the fork\'s line').to.equal('seen 4; last: assistant: seen 2; last: assistant: seen 0; last: none');
    await turn(client, 'a', 'four');
    expect((await history(client, 'a')).at(-1)!.content).to.equal('seen 6; last: assistant: seen 4; last: assistant: seen 2; last: assistant: seen 0; last: none');
    expect((await history(client, 'f')).map((m) => m.seq)).to.deep.equal([0, 1, 2, 3, 4, 5]);

    const list = (await client.call<{ sessions: { session_id: string; forked_from?: unknown; message_count: number }[] }>('session.list')).sessions;
    expect(list.find((s) => s.session_id === 'f')).to.deep.include({ forked_from: { session_id: 'a', turn_id: turns[1] }, message_count: 6 });
    expect(list.map((s) => s.session_id).sort()).to.deep.equal(['a', 'f']);
    expect(await client.call('session.forks', { session_id: 'a' })).to.deep.equal({ session_id: 'a', forked_from: null, forks: [{ session_id: 'f', turn_id: turns[1] }] });
    expect((await client.call<{ forked_from?: unknown }>('session.resume', { session_id: 'f' })).forked_from).to.deep.equal({ session_id: 'a', turn_id: turns[1] });
    // The default is the last turn that ended; a turn the source does not have is refused.
    const last = await client.call<{ forked_from: { turn_id: string } }>('session.fork', { session_id: 'a' });
    expect((await history(client, (last as unknown as { session_id: string }).session_id)).length).to.equal(8);
    expect(await code(client.call('session.fork', { session_id: 'a', at_turn_id: 'turn-nope' }))).to.equal(-32602);
    expect(await code(client.call('session.fork', { session_id: 'nobody' }))).to.equal(4004);

    // A compression of the fork replaces the fork's line, and only the fork's: the source keeps the
    // prefix they shared; a reload reads the fork's line back as its agent has it.
    const source = lines(await history(client, 'a'));
    await client.call('session.compress', { session_id: 'f' });
    const compressed = lines(await history(client, 'f'));
    expect(compressed.length).to.be.below(6);
    expect(lines(await history(client, 'a'))).to.deep.equal(source);
    await client.call('session.history.reload', { session_id: 'f' });
    expect(lines(await history(client, 'f'))).to.deep.equal(compressed);
    await turn(client, 'f', 'after the compression');
    expect((await history(client, 'f')).at(-1)!.content, 'the agent sees the compressed line').to.equal(`seen ${compressed.length}; last: ${compressed.at(-1)}`);
  });

  it('a fork while the source runs takes its last ended turn, not the running one; a rewind or a retry then is 4009', async () => {
    const daemon = await startDaemon(h);
    const client = await TestClient.connect(daemon);
    await client.call('session.create', { session_id: 'r' });
    await turn(client, 'r', 'done before');
    const { turn_id } = await client.call<{ turn_id: string }>('prompt.submit', { session_id: 'r', text: 'running\n/sleep 2' });
    await client.nextEvent('turn.started', 'r', (e) => e.payload['turn_id'] === turn_id);
    const fork = await client.call<{ session_id: string }>('session.fork', { session_id: 'r' });
    expect(lines(await history(client, fork.session_id))).to.deep.equal(['user: done before', 'assistant: done before']);
    // Nothing of a rewind while a turn runs.
    expect(await code(client.call('session.rewind', { session_id: 'r', to_turn_id: null }))).to.equal(4009);
    expect(await code(client.call('session.retry', { session_id: 'r' }))).to.equal(4009);
    await client.nextEvent('turn.end', 'r', (e) => e.payload['turn_id'] === turn_id);
    expect((await history(client, 'r')).filter((m) => m.superseded)).to.deep.equal([]);
  });

  it('a fork and a rewind of its source at the same moment: each fork that is made has its whole line, whichever commits first (24 pairs)', async () => {
    const daemon = await startDaemon(h, HISTORY_AGENT);
    const client = await TestClient.connect(daemon);
    const sids = Array.from({ length: 24 }, (_, i) => `race-${i}`);
    const turnsOf = await Promise.all(
      sids.map(async (sid) => {
        await client.call('session.create', { session_id: sid });
        const turns = [];
        for (const text of ['one', 'two', 'three']) turns.push(await turn(client, sid, text));
        return turns;
      }),
    );
    const before = await Promise.all(sids.map(async (sid) => lines(await history(client, sid)).slice(0, 4)));
    // The fork is made by the daemon's own connection, the rewind by the host's: two writers at once.
    const forks = await Promise.all(
      sids.map(async (sid, i) => {
        const [forked] = await Promise.allSettled([
          client.call('session.fork', { session_id: sid, at_turn_id: turnsOf[i]![1], new_session_id: `${sid}-f` }),
          client.call('session.rewind', { session_id: sid, to_turn_id: turnsOf[i]![0] }),
        ]);
        return forked.status === 'fulfilled';
      }),
    );
    for (const [i, sid] of sids.entries()) {
      expect(lines(await history(client, sid)), sid).to.deep.equal(before[i]!.slice(0, 2));
      if (!forks[i]) continue;
      expect(lines(await history(client, `${sid}-f`)), `the fork of ${sid}`).to.deep.equal(before[i]);
    }
  });

  it('rewind, retry and edit supersede without deleting: the agent no longer sees what they left, history --all shows every path, the fork keeps its line; the same after a restart', async () => {
    const { daemon, client, turns } = await threeTurns();
    await client.call('session.fork', { session_id: 'a', at_turn_id: turns[2], new_session_id: 'f' });
    const forkLine = lines(await history(client, 'f'));

    // A rewind into the prefix the fork shares.
    const rewound = await client.call<{ to_turn_id: string; superseded: string[]; history_version: number }>('session.rewind', { session_id: 'a', to_turn_id: turns[0] });
    expect(rewound).to.deep.include({ to_turn_id: turns[0], superseded: [turns[1], turns[2]] });
    const event = await client.nextEvent('session.rewound', 'a');
    expect(event.payload).to.deep.equal({ to_turn_id: turns[0], superseded: [turns[1], turns[2]] });
    expect(lines(await history(client, 'a'))).to.deep.equal(['user: one', 'assistant: seen 0; last: none']);
    expect(lines(await history(client, 'f')), 'the fork\'s line is its own').to.deep.equal(forkLine);
    await turn(client, 'a', 'two again');
    expect((await history(client, 'a')).at(-1)!.content, 'the agent does not see what was superseded').to.equal('seen 2; last: assistant: seen 0; last: none');

    // Retry: the last turn's prompt again; edit: another prompt in a turn's place.
    const retried = await client.call<{ status: string; turn_id: string }>('session.retry', { session_id: 'a' });
    await client.nextEvent('turn.end', 'a', (e) => e.payload['turn_id'] === retried.turn_id);
    expect(lines(await history(client, 'a')).slice(2)).to.deep.equal(['user: two again', 'assistant: seen 2; last: assistant: seen 0; last: none']);
    const retryTurn = (await history(client, 'a'))[2]!.turn_id!;
    const edited = await client.call<{ turn_id: string }>('prompt.edit', { session_id: 'a', turn_id: retryTurn, text: 'two, edited' });
    await client.nextEvent('turn.end', 'a', (e) => e.payload['turn_id'] === edited.turn_id);
    expect(lines(await history(client, 'a'))).to.deep.equal(['user: one', 'assistant: seen 0; last: none', 'user: two, edited', 'assistant: seen 2; last: assistant: seen 0; last: none']);

    const all = await history(client, 'a', true);
    expect(lines(all)).to.deep.equal([
      'user: one',
      'assistant: seen 0; last: none',
      '~user: two',
      '~assistant: seen 2; last: assistant: seen 0; last: none',
      '~user: three',
      '~assistant: seen 4; last: assistant: seen 2; last: assistant: seen 0; last: none',
      '~user: two again',
      '~assistant: seen 2; last: assistant: seen 0; last: none',
      '~user: two again',
      '~assistant: seen 2; last: assistant: seen 0; last: none',
      'user: two, edited',
      'assistant: seen 2; last: assistant: seen 0; last: none',
    ]);
    expect(all.filter((m) => m.superseded).every((m) => m.superseded_by === 'owner')).to.equal(true);

    // The same from the store after a restart (no cache): the lines, every path, the fork.
    const before = { a: lines(await history(client, 'a')), all: lines(await history(client, 'a', true)), f: lines(await history(client, 'f')) };
    client.close();
    expect((await h.runCli(['stop', '--home', daemon.home])).code).to.equal(0);
    await daemon.process.waitExit(15_000);
    const again = await startDaemon(h, HISTORY_AGENT, {}, daemon.home);
    const after = await TestClient.connect(again);
    expect({ a: lines(await history(after, 'a')), all: lines(await history(after, 'a', true)), f: lines(await history(after, 'f')) }).to.deep.equal(before);
    await after.call('session.resume', { session_id: 'f' });
    await turn(after, 'f', 'fork after restart');
    expect((await history(after, 'f')).at(-1)!.content).to.equal(`seen ${forkLine.length}; last: ${forkLine.at(-1)}`);
    const cli = await h.runCli(['history', 'a', '--all', '--home', daemon.home]);
    expect(cli.code, cli.stderr).to.equal(0);
    expect(cli.stdout).to.include('superseded');
    after.close();
  });

  it('a fork and a rewind acknowledged survive kill -9 of the host right after; a host killed inside a rewind\'s transaction leaves the old line whole', async () => {
    const { daemon, client, turns } = await threeTurns();
    const whole = lines(await history(client, 'a'));
    await client.call('session.fork', { session_id: 'a', at_turn_id: turns[1], new_session_id: 'f' });
    await client.call('session.rewind', { session_id: 'a', to_turn_id: turns[0] });
    process.kill(await hostPid(client), 'SIGKILL');
    await hostReady(daemon, 2);
    expect(lines(await history(client, 'a'))).to.deep.equal(whole.slice(0, 2));
    expect(lines(await history(client, 'a', true))).to.deep.equal([...whole.slice(0, 2), ...whole.slice(2).map((line) => `~${line}`)]);
    expect(lines(await history(client, 'f'))).to.deep.equal(whole.slice(0, 4));
    client.close();

    // The host stops itself inside the rewind's transaction (TURNHOST_STOP_AT), its rows moved, and is killed there.
    const stopping = await startDaemon(h, HISTORY_AGENT, { TURNHOST_STOP_AT: 'rewind-rows-moved' });
    const other = await TestClient.connect(stopping);
    await other.call('session.create', { session_id: 'b' });
    const ids = [];
    for (const text of ['one', 'two', 'three']) ids.push(await turn(other, 'b', text));
    const before = lines(await history(other, 'b'));
    const host = await hostPid(other);
    const rewind = other.call('session.rewind', { session_id: 'b', to_turn_id: ids[0] }).then(
      () => 'answered',
      () => 'failed',
    );
    expect(await stoppedWithin(host, 10_000), 'the host stopped inside the rewind').to.equal(true);
    process.kill(host, 'SIGKILL');
    expect(await rewind, 'a rewind that did not commit is not acknowledged').to.equal('failed');
    await hostReady(stopping, 2);
    expect(lines(await history(other, 'b'))).to.deep.equal(before);
    expect((await history(other, 'b', true)).filter((m) => m.superseded)).to.deep.equal([]);
    other.close();
  });

  it('the CLI: turnhost fork (--at, --as, --cwd, --json), rewind, retry, with their exit codes', async () => {
    const { daemon, client, turns } = await threeTurns();
    const cli = (...args: string[]) => h.runCli([...args, '--home', daemon.home]);
    const folder = h.tempDir('turnhost-fork-folder-');
    const forked = await cli('fork', 'a', '--at', turns[1]!, '--as', 'f2', '--cwd', folder);
    expect(forked.code, forked.stderr).to.equal(0);
    expect(forked.stdout).to.equal(`f2 (forked from a at ${turns[1]})\n`);
    expect(await storeRows(daemon.home, "SELECT cwd FROM sessions WHERE sid = 'f2'")).to.deep.equal([{ cwd: folder }]);
    expect(lines(await history(client, 'f2'))).to.have.length(4);
    const asJson = await cli('fork', 'a', '--json');
    expect(JSON.parse(asJson.stdout)).to.deep.include({ forked_from: { session_id: 'a', turn_id: turns[2] } });

    const rewound = await cli('rewind', 'a', '--to', turns[0]!);
    expect(rewound.code, rewound.stderr).to.equal(0);
    expect(rewound.stdout).to.equal(`a: 2 turn(s) superseded: ${turns[1]}, ${turns[2]}\n`);
    const retried = await cli('retry', 'a');
    expect(retried.code, retried.stderr).to.equal(0);
    const retryTurn = /^a: (\S+) \(/.exec(retried.stdout)?.[1];
    await client.nextEvent('turn.end', 'a', (e) => e.payload['turn_id'] === retryTurn);
    expect(lines(await history(client, 'a'))).to.deep.equal(['user: one', 'assistant: seen 0; last: none']);

    expect((await cli('fork', 'a', '--at', 'turn-none')).code, 'an unknown turn').to.equal(1);
    expect((await cli('fork', 'a', '--as', 'f2')).code, 'a taken id').to.equal(1);
    expect((await cli('fork', 'nobody')).code, 'an unknown session').to.equal(4);
    expect((await cli('rewind', 'nobody', '--to', 'start')).code).to.equal(4);
    client.close();
    expect((await cli('stop')).code).to.equal(0);
    await daemon.process.waitExit(15_000);
    expect((await cli('fork', 'a')).code, 'no daemon').to.equal(3);
  });

  it('slash.retry and prompt.submit.truncate keep what they drop (superseded), and the agent sees what it did before', async () => {
    const { client } = await threeTurns();
    const retried = await client.call<{ output: string }>('slash.retry', { session_id: 'a' });
    expect(retried.output).to.equal('three');
    expect(lines(await history(client, 'a'))).to.have.length(4);
    const truncated = await client.call<{ removed: number }>('prompt.submit.truncate', { session_id: 'a', keep: 2 });
    expect(truncated.removed).to.equal(2);
    expect(lines(await history(client, 'a'))).to.deep.equal(['user: one', 'assistant: seen 0; last: none']);
    expect((await history(client, 'a', true)).filter((m) => m.superseded)).to.have.length(4);
    await turn(client, 'a', 'next');
    expect((await history(client, 'a')).at(-1)!.content).to.equal('seen 2; last: assistant: seen 0; last: none');
  });

  it('every door: REST, the client library over the WebSocket, AG-UI (an edit, a regenerate), an editor\'s session/fork', async () => {
    const token = 'branch-doors-token-7d1c';
    const daemon = await startDaemon(h, ['--listen', '127.0.0.1:0'], { TURNHOST_TOKEN: token });
    const client = await TestClient.connect(daemon);
    const url = (await client.call<{ http: { url: string } }>('host.status')).http.url;
    const port = Number(new URL(url).port);
    const rest = async (method: string, path: string, body?: object) => {
      const answer = await httpRequest(port, { method, path, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, ...(body === undefined ? {} : { body }) });
      return { status: answer.status, body: answer.json() };
    };
    await client.call('session.create', { session_id: 'd' });
    const t1 = await turn(client, 'd', 'one');
    const t2 = await turn(client, 'd', 'two');

    // REST.
    const forked = await rest('POST', '/v1/sessions/d/fork', { at_turn_id: t1, new_session_id: 'd-fork' });
    expect(forked).to.deep.equal({ status: 201, body: { session_id: 'd-fork', forked_from: { session_id: 'd', turn_id: t1 } } });
    expect((await rest('GET', '/v1/sessions/d/forks')).body).to.deep.include({ forks: [{ session_id: 'd-fork', turn_id: t1 }] });
    expect((await rest('POST', '/v1/sessions/d/rewind', { to_turn_id: t1 })).body).to.deep.include({ to_turn_id: t1, superseded: [t2] });
    const retried = await rest('POST', '/v1/sessions/d/retry', {});
    expect(retried.status).to.equal(202);
    await client.nextEvent('turn.end', 'd', (e) => e.payload['turn_id'] === retried.body['turn_id']);
    const edited = await rest('POST', `/v1/sessions/d/turns/${String(retried.body['turn_id'])}/edit`, { text: 'one, edited' });
    expect(edited.status).to.equal(202);
    await client.nextEvent('turn.end', 'd', (e) => e.payload['turn_id'] === edited.body['turn_id']);
    const all = (await rest('GET', '/v1/sessions/d/history?all=true')).body['messages'] as HistoryMessage[];
    // The retry took the last turn, `one` (the rewind had left it last): every path is there, each
    // just before the place it left the line, or after it when the line no longer reaches there.
    expect(lines(all)).to.deep.equal(['~user: one', '~assistant: one', '~user: one', '~assistant: one', 'user: one, edited', 'assistant: one, edited', '~user: two', '~assistant: two']);

    // The client library, over the WebSocket.
    const lib = await connect({ url, token });
    try {
      const fork = await lib.forkSession('d', { new_session_id: 'lib-fork' });
      expect(fork.forked_from).to.deep.equal({ session_id: 'd', turn_id: edited.body['turn_id'] });
      const rewound = await lib.rewind('lib-fork', null);
      expect(rewound.superseded).to.deep.equal([]); // its line is all its parent's: nothing of its own to supersede
      expect((await lib.history('lib-fork')).messages).to.deep.equal([]);
      await lib.createSession({ session_id: 'lib' });
      for await (const event of lib.turn('lib', 'first')) void event;
      // The socket client follows the session too (from its first event): it sees each turn end.
      await client.call('session.resume', { session_id: 'lib', after_seq: 0 });
      const again = await lib.retry('lib');
      await client.nextEvent('turn.end', 'lib', (e) => e.payload['turn_id'] === again.turn_id);
      expect((await lib.history('lib', { all: true })).messages.filter((m) => m.superseded).length).to.equal(2);
      const changed = await lib.editPrompt('lib', again.turn_id!, 'first, changed');
      await client.nextEvent('turn.end', 'lib', (e) => e.payload['turn_id'] === changed.turn_id);
      expect((await lib.history('lib')).messages.map((m) => m.content)).to.deep.equal(['first, changed', 'first, changed']);
    } finally {
      lib.close();
    }

    // AG-UI: a run whose messages change an earlier prompt is an edit there; the same ones again, a regenerate.
    const agui = new HttpAgent({ url: `${url}/v1/ag-ui`, headers: { authorization: `Bearer ${token}` }, threadId: 'ag' });
    const runOnce = (runId: string) => agui.runAgent({ runId }, {});
    agui.addMessage({ id: 'u1', role: 'user', content: 'alpha' });
    await runOnce('r1');
    agui.addMessage({ id: 'u2', role: 'user', content: 'beta' });
    await runOnce('r2');
    agui.setMessages([{ id: 'u1', role: 'user', content: 'alpha' }, { id: 'a1', role: 'assistant', content: 'alpha' }, { id: 'u2', role: 'user', content: 'beta, edited' }]);
    await runOnce('r3');
    expect(lines(await history(client, 'ag'))).to.deep.equal(['user: alpha', 'assistant: alpha', 'user: beta, edited', 'assistant: beta, edited']);
    agui.setMessages([{ id: 'u1', role: 'user', content: 'alpha' }, { id: 'a1', role: 'assistant', content: 'alpha' }, { id: 'u2', role: 'user', content: 'beta, edited' }]);
    await runOnce('r4');
    expect(lines(await history(client, 'ag'))).to.have.length(4);
    expect((await history(client, 'ag', true)).filter((m) => m.superseded).map((m) => m.content)).to.deep.equal(['beta', 'beta', 'beta, edited', 'beta, edited']);
    await runOnce('r4'); // the same run again: nothing more is superseded
    expect((await history(client, 'ag', true)).filter((m) => m.superseded)).to.have.length(4);

    // An editor forks through turnhost acp (declared in its capabilities).
    const editor = await Editor.start(h, daemon.home, {});
    const init = await editor.agent.request('initialize', { protocolVersion: 1, clientCapabilities: {} });
    expect(init.agentCapabilities?.sessionCapabilities).to.deep.include({ fork: {} });
    const { sessionId } = await editor.agent.request('session/new', { cwd: daemon.home, mcpServers: [] });
    await editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'from the editor' }] });
    const editorFork = (await (editor.agent as unknown as { request(method: string, params: object): Promise<{ sessionId: string }> }).request('session/fork', { sessionId, cwd: daemon.home, mcpServers: [] })).sessionId;
    expect(lines(await history(client, editorFork))).to.deep.equal(['user: from the editor', 'assistant: from the editor']);
    client.close();
  });
});
