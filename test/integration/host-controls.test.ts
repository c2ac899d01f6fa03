import { expect } from 'chai';
import { Harness, type Frame, type HostProcess } from '../helpers/processes.js';

let counter = 0;

async function control(host: HostProcess, sid: string, route_name: string, extra: object = {}): Promise<Frame> {
  const request_id = `c${++counter}`;
  host.send({ type: 'control', sid, request_id, route_name, ...extra });
  return host.nextOf(['control.ack', 'control.error', 'reload_mcp.ack'], { where: (f) => f['request_id'] === request_id });
}

async function runTurn(host: HostProcess, sid: string, text: string): Promise<Frame> {
  const request_id = `t${++counter}`;
  host.send({ type: 'turn.start', sid, request_id, text });
  return host.next('turn.end', { where: (f) => f['request_id'] === request_id });
}

async function history(h: Harness, home: string, sid: string): Promise<{ role: string; content: string }[]> {
  const out = await h.runCli(['history', sid, '--home', home, '--json']);
  expect(out.code, out.stderr).to.equal(0);
  return JSON.parse(out.stdout) as { role: string; content: string }[];
}

describe('host: control routes', () => {
  const h = new Harness();
  afterEach(() => h.cleanup());

  it('refuses an unclassified route, an unknown session, and an idle-gated route while a turn runs', async () => {
    const host = await h.startHost(h.tempDir());
    expect(await control(host, 's1', 'slash.refine')).to.include({ type: 'control.error', message: 'unclassified route: slash.refine' });
    expect(await control(host, 'nobody', 'slash.model', { params: { model: 'm' } })).to.include({
      type: 'control.error',
      message: 'session not found',
    });
    host.send({ type: 'turn.start', sid: 's1', request_id: 'long', text: '/sleep 30' });
    await host.next('turn.started');
    for (const route of ['slash.model', 'session.reset', 'session.compress', 'slash.retry', 'prompt.submit.truncate', 'session.history.reload']) {
      const params = route === 'slash.model' ? { model: 'm' } : route === 'prompt.submit.truncate' ? { keep: 0 } : {};
      expect(await control(host, 's1', route, { params }), route).to.include({ type: 'control.error', message: 'session busy' });
    }
  });

  it('runs the run-concurrent routes during a turn: session.save commits the tail, reload.mcp answers ok', async () => {
    const home = h.tempDir();
    const host = await h.startHost(home);
    await runTurn(host, 's1', 'first');
    host.send({ type: 'turn.start', sid: 's1', request_id: 'long', text: 'second\n/sleep 30' });
    await host.next('turn.started', { where: (f) => f['request_id'] === 'long' });
    expect(await control(host, 's1', 'session.save')).to.include({ type: 'control.ack', route_name: 'session.save', message_count: 3 });
    const reload = await control(host, 's1', 'reload.mcp');
    expect(reload).to.include({ type: 'reload_mcp.ack' });
    expect(reload['response']).to.deep.include({ result: { status: 'ok' } });
    host.send({ type: 'reload_mcp', sid: 's1', request_id: 'rm' });
    expect((await host.next('reload_mcp.ack', { where: (f) => f['request_id'] === 'rm' }))['response']).to.deep.equal({
      jsonrpc: '2.0',
      id: 'rm',
      result: { status: 'ok' },
    });
  });

  it('applies each idle-gated route, stores it, and acks with the history meta', async () => {
    const home = h.tempDir();
    const host = await h.startHost(home);
    for (const text of ['one', 'two', 'three']) await runTurn(host, 's1', text);

    const model = await control(host, 's1', 'slash.model', { command: '/model big-model' });
    expect(model).to.include({ type: 'control.ack', route_name: 'slash.model', session_key: 's1', message_count: 6 });
    expect(model['result']).to.deep.equal({ output: 'model set to big-model' });
    expect(((await runTurn(host, 's1', 'four'))['session_info'] as { model: string }).model).to.equal('big-model');

    const retry = await control(host, 's1', 'slash.retry');
    expect(retry['result']).to.deep.equal({ output: 'four' });
    expect(retry['message_count']).to.equal(6);
    expect((await history(h, home, 's1')).map((m) => m.content)).to.deep.equal(['one', 'one', 'two', 'two', 'three', 'three']);

    const before = retry['history_version'] as number;
    const compress = await control(host, 's1', 'slash.compress', { command: '/compress the gist' });
    expect(compress['message_count']).to.equal(5);
    expect(compress['result']).to.deep.include({ replaced: 6 });
    expect(compress['session_key']).to.not.equal('s1');
    expect(compress['history_version']).to.be.greaterThan(before);
    expect((await history(h, home, 's1')).map((m) => m.content)).to.deep.equal([
      '[compressed 2 earlier messages (focus: the gist)]',
      'two',
      'two',
      'three',
      'three',
    ]);

    const truncate = await control(host, 's1', 'prompt.submit.truncate', { params: { keep: 3 } });
    expect(truncate).to.include({ message_count: 3 });
    expect(truncate['result']).to.deep.equal({ output: 'kept 3 messages', removed: 2 });
    expect((await history(h, home, 's1')).map((m) => m.content)).to.deep.equal(['[compressed 2 earlier messages (focus: the gist)]', 'two', 'two']);

    const reset = await control(host, 's1', 'session.reset');
    expect(reset).to.include({ message_count: 0 });
    expect(reset['session_key']).to.not.equal(compress['session_key']);
    expect(await history(h, home, 's1')).to.deep.equal([]);

    await runTurn(host, 's1', 'fresh');
    const reload = await control(host, 's1', 'session.history.reload');
    expect(reload).to.include({ message_count: 2 });

    const persona = await control(host, 's1', 'slash.personality', { params: { personality: 'terse' } });
    const prompt = await control(host, 's1', 'slash.prompt', { params: { prompt: 'be brief' } });
    expect(persona['result']).to.deep.equal({ output: 'personality set to terse' });
    expect(prompt['result']).to.deep.equal({ output: 'system prompt set' });
    expect((await runTurn(host, 's1', 'check'))['session_info']).to.include({ model: 'big-model', personality: 'terse', system_prompt: 'be brief' });
  });

  it('keeps overrides across a host restart (they are stored)', async () => {
    const home = h.tempDir();
    let host = await h.startHost(home);
    await runTurn(host, 's1', 'hi');
    await control(host, 's1', 'slash.model', { params: { model: 'stored-model' } });
    host.closeStdin();
    expect((await host.waitExit()).code).to.equal(0);
    host = await h.startHost(home);
    expect(((await runTurn(host, 's1', 'again'))['session_info'] as { model: string }).model).to.equal('stored-model');
  });

  it('says when there is nothing to retry', async () => {
    const host = await h.startHost(h.tempDir());
    await runTurn(host, 's1', 'x');
    await control(host, 's1', 'session.reset');
    expect(await control(host, 's1', 'slash.retry')).to.include({ type: 'control.error', message: 'nothing to retry: the session has no user message' });
  });
});
