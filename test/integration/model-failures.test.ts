import { expect } from 'chai';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readDatabase } from '../helpers/database.js';
import { fileWhere } from '../helpers/files.js';
import { MISSING_RESULT } from '../../agents/model/history.js';
import { eventsOf, fixtureServer, modelScenes, runTurn, startModelHost } from '../helpers/model-agent.js';
import { Harness, type HostProcess } from '../helpers/processes.js';

/** An interrupt's ack and the turn's end arrive within this of the interrupt being sent (AGENT.md §3). */
const INTERRUPT_BOUND_MS = 1000;

async function interruptWithin(host: HostProcess, sid: string, requestId: string): Promise<{ ackMs: number; endMs: number }> {
  const sent = performance.now();
  host.send({ type: 'interrupt', sid, request_id: `int-${requestId}` });
  await host.next('interrupt.ack', { where: (f) => f['request_id'] === `int-${requestId}` });
  const ackMs = performance.now() - sent;
  const end = await host.next('turn.end', { where: (f) => f['request_id'] === requestId });
  expect(end['interrupted']).to.equal(true);
  return { ackMs, endMs: performance.now() - sent };
}

describe('model agent: interrupts, failures and compression (real host, fake model server)', () => {
  const h = new Harness();
  const { scene, cleanup } = modelScenes(h);
  afterEach(cleanup);
  const statuses = (host: HostProcess, sid: string, kind: string) => eventsOf(host, sid, 'status.update').filter((e) => e.payload['kind'] === kind);

  it('an interrupt mid-stream aborts the request: ack, then turn.end interrupted within 1 s; what was seen is kept', async () => {
    const s = await scene();
    s.fake.reply({ stallAfter: ['Partial ', 'answer'] }, { text: ['next'] });
    const host = await startModelHost(h, s);
    host.send({ type: 'turn.start', sid: 's1', request_id: 'r1', text: 'go' });
    await host.next('rpc', { where: (f) => JSON.stringify(f['message']).includes('"answer"') });
    const timing = await interruptWithin(host, 's1', 'r1');
    expect(timing.endMs).to.be.below(INTERRUPT_BOUND_MS);
    const rows = readDatabase(s.home, (db) => db.prepare('SELECT role, content FROM messages ORDER BY seq').all());
    expect(rows).to.deep.equal([{ role: 'user', content: 'go' }, { role: 'assistant', content: 'Partial answer' }]);
    await runTurn(host, 's1', 'r2', 'again');
    expect(s.fake.requests[1]!.body.messages.slice(1)).to.deep.equal([
      { role: 'user', content: 'go' },
      { role: 'assistant', content: 'Partial answer' },
      { role: 'user', content: 'again' },
    ]);
  });

  it('an interrupt mid-tool cancels the MCP call within 1 s; the next request gets a synthetic result for it', async () => {
    const s = await scene();
    s.writeConfig({ approval: { default: 'allow' }, mcp_servers: { t: fixtureServer(s) } });
    s.fake.reply({ toolCalls: [{ id: 'slow1', name: 'mcp_t_slow', args: ['{"seconds": 30}'] }] }, { text: ['fine'] });
    const host = await startModelHost(h, s);
    host.send({ type: 'turn.start', sid: 's1', request_id: 'r1', text: 'wait' });
    await host.next('rpc', { where: (f) => JSON.stringify(f['message']).includes('"tool.start"') });
    await waitForFile(s.mcpLog, '"start"');
    const timing = await interruptWithin(host, 's1', 'r1');
    expect(timing.endMs).to.be.below(INTERRUPT_BOUND_MS);
    await waitForFile(s.mcpLog, '"cancelled"');
    await runTurn(host, 's1', 'r2', 'after');
    const tool = s.fake.requests[1]!.body.messages.find((m) => m.role === 'tool')!;
    expect(tool).to.deep.equal({ role: 'tool', tool_call_id: 'slow1', content: MISSING_RESULT });
  });

  it('401 fails the turn with reason auth, naming the base URL and the key variable, never the key; no retry', async () => {
    const s = await scene();
    s.fake.reply({ status: 401, message: 'Incorrect API key provided: sk-test-VERYSECRET' });
    const host = await startModelHost(h, s, [], { OPENAI_API_KEY: 'sk-test-VERYSECRET' });
    const end = await runTurn(host, 's1', 'r1', 'hi');
    expect(end).to.include({ type: 'turn.error', reason: 'auth' });
    expect(String(end['message'])).to.equal(`authentication failed at ${s.fake.baseUrl} (401): check $OPENAI_API_KEY`);
    expect(s.fake.requests).to.have.length(1);
    expect(s.fake.requests[0]!.headers['authorization']).to.equal('Bearer sk-test-VERYSECRET');
    expect(JSON.stringify(host.frames) + host.stderr).to.not.include('VERYSECRET');
  });

  it('retries 429 and 5xx with a status.update per retry, then fails upstream after max_retries', async () => {
    const s = await scene({ max_retries: 2 });
    s.fake.reply(
      { status: 429, message: 'slow down', headers: { 'retry-after-ms': '10' } },
      { text: ['made it'] },
      { status: 500, message: 'boom', headers: { 'retry-after-ms': '10' } },
      { status: 503, message: 'boom', headers: { 'retry-after-ms': '10' } },
      { status: 502, message: 'still boom', headers: { 'retry-after-ms': '10' } },
    );
    const host = await startModelHost(h, s);
    expect((await runTurn(host, 's1', 'r1', 'one')).type).to.equal('turn.end');
    expect(statuses(host, 's1', 'retry')).to.have.length(1);
    const failed = await runTurn(host, 's1', 'r2', 'two');
    expect(failed).to.include({ type: 'turn.error', reason: 'upstream' });
    expect(String(failed['message'])).to.include(s.fake.baseUrl).and.include('502').and.include('after 2 retries');
    expect(statuses(host, 's1', 'retry')).to.have.length(3);
    expect(s.fake.requests).to.have.length(5);
  });

  it('a 400 that is not about the context length fails upstream at once; a connection cut mid-stream fails upstream', async () => {
    const s = await scene();
    s.fake.reply({ status: 400, message: 'bad temperature' }, { cutAfter: ['half'] });
    const host = await startModelHost(h, s);
    const bad = await runTurn(host, 's1', 'r1', 'one');
    expect(bad).to.include({ reason: 'upstream' });
    expect(String(bad['message'])).to.include('400').and.include(s.fake.baseUrl);
    const cut = await runTurn(host, 's1', 'r2', 'two');
    expect(cut).to.include({ type: 'turn.error', reason: 'upstream' });
    expect(String(cut['message'])).to.include(s.fake.baseUrl);
    expect(s.fake.requests).to.have.length(2);
  });

  it('a stream that stalls mid-body fails with reason stalled after idle_timeout_s', async () => {
    const s = await scene({ idle_timeout_s: 0.5 });
    s.fake.reply({ stallAfter: ['start'] });
    const host = await startModelHost(h, s);
    const began = performance.now();
    const end = await runTurn(host, 's1', 'r1', 'hi');
    expect(end).to.include({ type: 'turn.error', reason: 'stalled' });
    expect(String(end['message'])).to.include(s.fake.baseUrl);
    expect(performance.now() - began).to.be.within(450, 5000);
  });

  it('a 400 about the context length compresses the history once and retries', async () => {
    const s = await scene({ keep_recent: 2 });
    s.fake.fallback = () => ({ text: ['reply'] });
    const host = await startModelHost(h, s);
    for (let i = 1; i <= 3; i++) await runTurn(host, 's1', `warm${i}`, `message ${i}`);
    s.fake.reply({ status: 400, message: "This model's maximum context length is 10 tokens", code: 'context_length_exceeded' }, { summary: 'they said three things' }, { text: ['after compression'] });
    const end = await runTurn(host, 's1', 'r1', 'the long one');
    expect(end).to.include({ type: 'turn.end' });
    const retried = s.fake.requests.at(-1)!.body.messages;
    expect(retried[1]).to.deep.equal({ role: 'system', content: 'Summary of the earlier conversation (4 messages):\nthey said three things' });
    expect(retried.slice(2)).to.deep.equal([
      { role: 'user', content: 'message 3' },
      { role: 'assistant', content: 'reply' },
      { role: 'user', content: 'the long one' },
    ]);
    expect(end['session_key']).to.match(/^sk-/);
    const stored = readDatabase(s.home, (db) => db.prepare("SELECT role, content FROM messages WHERE sid = 's1' ORDER BY seq").all() as { role: string; content: string }[]);
    expect(stored.map((m) => m.role)).to.deep.equal(['system', 'user', 'assistant', 'user', 'assistant']);
  });

  it('compresses automatically before a request estimated past compress_at × context_tokens', async () => {
    const s = await scene({ context_tokens: 1000, compress_at: 0.5, keep_recent: 2 });
    const host = await startModelHost(h, s);
    s.fake.reply({ text: ['short'], usage: { prompt_tokens: 480, completion_tokens: 1 } });
    await runTurn(host, 's1', 'r1', 'first');
    s.fake.reply({ text: ['short'], usage: { prompt_tokens: 490, completion_tokens: 1 } });
    await runTurn(host, 's1', 'r2', 'second');
    s.fake.reply({ summary: 'a summary' }, { text: ['compressed reply'] });
    const end = await runTurn(host, 's1', 'r3', 'x'.repeat(200));
    expect(end.type).to.equal('turn.end');
    expect(statuses(host, 's1', 'compress').map((e) => e.payload['text'])).to.deep.equal([
      'compressing the history: the conversation is close to the context limit',
      'compressed 4 messages into 3',
    ]);
    expect(s.fake.requests.at(-1)!.body.messages[1]!.content).to.include('a summary');
  });

  it('session.compress: the model writes the summary; when that request fails the history is unchanged and the route says why', async () => {
    const s = await scene({ keep_recent: 2 });
    s.fake.fallback = () => ({ text: ['r'] });
    const host = await startModelHost(h, s);
    for (let i = 1; i <= 3; i++) await runTurn(host, 's1', `t${i}`, `m${i}`);
    s.fake.reply({ status: 500, message: 'no' }, { status: 500, message: 'no' }, { status: 500, message: 'no' });
    host.send({ type: 'control', sid: 's1', request_id: 'c1', route_name: 'session.compress', params: { focus_topic: 'plans' } });
    const failed = await host.nextOf(['control.ack', 'control.error'], { where: (f) => f['request_id'] === 'c1' });
    expect(failed.type).to.equal('control.error');
    expect(String(failed['message'])).to.include('compression failed').and.include('500');
    expect(readDatabase(s.home, (db) => db.prepare('SELECT count(*) AS n FROM messages').get())).to.deep.equal({ n: 6 });
    s.fake.reply({ summary: 'focused summary' });
    host.send({ type: 'control', sid: 's1', request_id: 'c2', route_name: 'session.compress', params: { focus_topic: 'plans' } });
    const ack = await host.next('control.ack', { where: (f) => f['request_id'] === 'c2' });
    expect(ack['message_count']).to.equal(3);
    expect(s.fake.requests.at(-1)!.body.messages.at(-1)!.content).to.include('Focus the summary on: plans');
  });

  it('a bad config exits 78 with one line naming the file and the key path, for each kind of mistake', async () => {
    const home = h.tempDir();
    const file = join(home, 'agent.json');
    const attempt = async (content: string | null, args: string[] = [], env: NodeJS.ProcessEnv = {}) => {
      if (content !== null) writeFileSync(file, content);
      const result = await h.runCli(['host', '--home', home, '--agent', 'openai', ...args], { TURNHOST_MODEL: '', ...env });
      expect(result.code, result.stderr).to.equal(78);
      expect(result.stderr.trim().split('\n')).to.have.length(1);
      return result.stderr.trim();
    };
    expect(await attempt('{"model": "m", "mcp_servers": {"fs": {"command": 7}}}')).to.equal(`turnhost host: ${file}: mcp_servers.fs.command: expected a string`);
    expect(await attempt('{"model": "m", "colour": "red"}')).to.equal(`turnhost host: ${file}: colour: unknown key`);
    expect(await attempt('{"model": "m", "compress_at": 2}')).to.match(/compress_at: .*(<=|1)/);
    expect(await attempt('{"model": "m",')).to.include(`${file}: not JSON`);
    expect(await attempt('{}')).to.include('model: no model given').and.include('$TURNHOST_MODEL');
    expect(await attempt(null, ['--agent-config', join(home, 'missing.json')])).to.include('missing.json: cannot read the agent config: ENOENT');
    expect(await attempt(null, [], { TURNHOST_AGENT_CONFIG: join(home, 'also-missing.json') })).to.include('also-missing.json');
    // No file at all and a model from the environment: every key takes its default.
    writeFileSync(file, '{}');
    const started = await h.startHost(home, ['--agent', 'openai', '--agent-config', file], { TURNHOST_MODEL: 'from-env' });
    expect(started.frames[0]!.type).to.equal('hello');
  });
});

function waitForFile(path: string, text: string): Promise<string> {
  // The fixture appends to a file no process signals on: it is awaited until it holds the text.
  return fileWhere(path, (held) => held.includes(text), JSON.stringify(text));
}
