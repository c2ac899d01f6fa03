import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { hostPid, hostReady, startDaemon, TestClient } from '../helpers/daemon.js';
import { fixtureServer, modelScenes } from '../helpers/model-agent.js';
import { filesUnder } from '../helpers/files.js';
import { pngImage } from '../helpers/content-files.js';
import { Harness } from '../helpers/processes.js';

const KEY = 'sk-test-LEAKCANARY-7f3a9c2e41';

function environOf(pid: number): Record<string, string> {
  const entries = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter((e) => e !== '');
  return Object.fromEntries(entries.map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]));
}

describe('model agent through the daemon (real processes, fake model server, MCP fixture)', function () {
  this.timeout(40_000);
  const h = new Harness();
  const { scene, cleanup } = modelScenes(h);
  afterEach(cleanup);

  it('content (PROTOCOL.md §2.4): with vision, a pasted PNG goes to the model as an image_url data URL and a text file as text; without, an image ends the turn "agent openai does not take images"', async () => {
    const s = await scene();
    s.writeConfig({ vision: true });
    const daemon = await startDaemon(h, ['--agent', 'openai'], { OPENAI_API_KEY: KEY }, s.home);
    const client = await TestClient.connect(daemon);
    await client.call('session.create', { session_id: 'v' });
    const png = pngImage(4, 4, 51);
    s.fake.reply({ text: ['a small picture'] });
    await client.call('prompt.submit', {
      session_id: 'v',
      content: [
        { type: 'text', text: 'what is this?' },
        { type: 'image', mimeType: 'image/png', data: png.toString('base64') },
        { type: 'resource_link', name: 'notes.md', mimeType: 'text/markdown', data: Buffer.from('# notes').toString('base64') },
      ],
    });
    await client.nextEvent('turn.end', 'v');
    const sent = s.fake.requests[0]!.body.messages.at(-1)!;
    expect(sent).to.deep.equal({
      role: 'user',
      content: [
        { type: 'text', text: 'what is this?' },
        { type: 'image_url', image_url: { url: `data:image/png;base64,${png.toString('base64')}` } },
        { type: 'text', text: 'notes.md:\n# notes' },
      ],
    });
    s.writeConfig({ vision: false });
    await client.call('agents.reload');
    client.events.length = 0;
    await client.call('prompt.submit', { session_id: 'v', content: [{ type: 'image', mimeType: 'image/png', data: png.toString('base64') }] });
    const refused = await client.nextEvent('turn.error', 'v');
    expect(refused.payload).to.deep.include({ reason: 'invalid', message: 'agent openai does not take images' });
    expect(s.fake.requests).to.have.length(1);
  });

  it('two clients: both get the approval question, the first answer wins; the key reaches the host and nothing else', async () => {
    const s = await scene();
    // No base_url in the file: it comes from $OPENAI_BASE_URL, which the daemon passes on.
    s.writeConfig({ base_url: undefined, mcp_servers: { t: fixtureServer(s) } });
    const env = { OPENAI_API_KEY: KEY, OPENAI_BASE_URL: s.fake.baseUrl, UNRELATED_SECRET: 'do-not-pass' };
    const daemon = await startDaemon(h, ['--agent', 'openai'], env, s.home);
    const a = await TestClient.connect(daemon);
    const b = await TestClient.connect(daemon);
    await a.call('session.create', { session_id: 'm' });
    await b.call('session.resume', { session_id: 'm' }).catch(() => b.call('session.create', { session_id: 'm' }));
    s.fake.reply({ toolCalls: [{ id: 'c1', name: 'mcp_t_add', args: ['{"a":2,"b":2}'] }] }, { text: ['four'] });
    await a.call('prompt.submit', { session_id: 'm', text: 'add' });
    await a.until(() => a.requests.length === 1, 'the approval on a');
    await b.until(() => b.requests.length === 1, 'the approval on b');
    expect(a.requests[0]!.method).to.equal('approval.request');
    expect(a.requests[0]!.params).to.deep.include({ tool: 'mcp_t_add', arguments: { a: 2, b: 2 } });
    a.rpc.respond(a.requests[0]!.id, { result: { approved: true } });
    const end = await b.nextEvent('turn.end', 'm');
    expect(end.payload['usage']).to.deep.equal({ prompt_tokens: 22, completion_tokens: 14, calls: 2 });
    expect(await b.call('request.answer', { request_id: b.requests[0]!.id, result: { approved: false } })).to.deep.equal({ status: 'expired' });
    expect(b.reply('m')).to.equal('four');
    expect(s.fake.requests[0]!.headers['authorization']).to.equal(`Bearer ${KEY}`);

    // The key and the base URL reach the host on its catalogue descriptor (the request above
    // carried the key): the environment it was started with holds neither, nor what no agent needs.
    const hostEnv = environOf(await hostPid(a));
    expect(hostEnv).to.not.have.property('OPENAI_API_KEY');
    expect(hostEnv).to.not.have.property('OPENAI_BASE_URL');
    expect(hostEnv).to.not.have.property('UNRELATED_SECRET');
    // A host the daemon starts again after a crash is handed them the same way.
    process.kill(await hostPid(a), 'SIGKILL');
    await hostReady(daemon, 2);
    expect(environOf(await hostPid(a))).to.not.have.property('OPENAI_API_KEY');

    s.fake.reply({ status: 401, message: `Incorrect API key provided: ${KEY}` });
    await a.call('prompt.submit', { session_id: 'm', text: 'fail' });
    const failed = await a.nextEvent('turn.error', 'm');
    expect(failed.payload).to.include({ reason: 'auth' });
    expect(s.fake.requests.at(-1)!.headers['authorization'], 'the restarted host has the key').to.equal(`Bearer ${KEY}`);
    const repl = await h.runCli(['repl', '--home', s.home, '--offline'], {}, 15_000);
    const stop = await h.runCli(['stop', '--home', s.home]);
    expect(stop.code).to.equal(0);
    await daemon.process.waitExit(15_000);
    const outputs = [JSON.stringify(a.events), JSON.stringify(b.events), JSON.stringify(a.requests), daemon.process.stderr, repl.stdout, repl.stderr, stop.stdout];
    for (const output of outputs) expect(output).to.not.include(KEY);
    const files = filesUnder(s.home);
    expect(files.some((f) => f.endsWith('turnhost.db'))).to.equal(true);
    for (const file of files) expect(readFileSync(file).includes(KEY), file).to.equal(false);
  });

  it('kill -9 of the host during a slow MCP tool: the turn fails as a crash, and the next turn sends a valid request', async () => {
    const s = await scene();
    s.writeConfig({ approval: { default: 'allow' }, mcp_servers: { t: fixtureServer(s) } });
    const daemon = await startDaemon(h, ['--agent', 'openai'], {}, s.home);
    const client = await TestClient.connect(daemon);
    await client.call('session.create', { session_id: 'k' });
    s.fake.reply({ toolCalls: [{ id: 'slow', name: 'mcp_t_slow', args: ['{"seconds": 60}'] }] });
    await client.call('prompt.submit', { session_id: 'k', text: 'wait a minute' });
    await client.nextEvent('tool.start', 'k');
    process.kill(await hostPid(client), 'SIGKILL');
    expect((await client.nextEvent('turn.error', 'k')).payload).to.include({ reason: 'crash' });
    await hostReady(daemon, 2);
    s.fake.reply({ text: ['back again'] });
    await client.call('prompt.submit', { session_id: 'k', text: 'are you there?' });
    const end = await client.nextEvent('turn.end', 'k');
    expect(end.payload['interrupted']).to.equal(false);
    const sent = s.fake.requests.at(-1)!.body.messages.slice(1);
    expect(sent.map((m) => m.role)).to.deep.equal(['user', 'assistant', 'tool', 'user']);
    expect(sent[2]).to.deep.equal({ role: 'tool', tool_call_id: 'slow', content: '(no result: the turn was interrupted)' });
  });
});

describe('turnhost chat with the model agent (real processes)', function () {
  this.timeout(40_000);
  const h = new Harness();
  const { scene, cleanup } = modelScenes(h);
  afterEach(cleanup);

  it('prints reasoning marked, each tool call and its outcome, asks the approval on stdin, and ends with the usage line', async () => {
    const s = await scene();
    s.writeConfig({ mcp_servers: { t: fixtureServer(s) } });
    s.fake.reply(
      { reasoning: ['I should ', 'add.'], text: [], toolCalls: [{ id: 'c1', name: 'mcp_t_add', args: ['{"a":40,"b":2}'] }], usage: { prompt_tokens: 30, completion_tokens: 3 } },
      { text: ['It is ', '42.'], usage: { prompt_tokens: 50, completion_tokens: 4 } },
    );
    const chat = h.spawnCli(['chat', '--agent', 'openai', '--home', s.home, 'what is 40+2?']);
    chat.stdin!.end('y\n');
    let stdout = '';
    let stderr = '';
    chat.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
    chat.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    const code = await new Promise<number | null>((resolve) => chat.once('close', resolve));
    expect(code, stderr).to.equal(0);
    expect(stdout).to.equal('It is 42.\n');
    expect(stderr).to.include('[reasoning] I should add.\n');
    expect(stderr).to.include('→ mcp_t_add({"a":40,"b":2})\n');
    expect(stderr).to.include('approve: mcp_t_add({"a":40,"b":2})? [y/N] y\n');
    expect(stderr).to.include('← mcp_t_add ok: 42\n');
    expect(stderr).to.include('[usage] 80 prompt + 7 completion tokens, 2 model calls\n');
  });

  it('a broken agent config stops chat and start before any daemon runs: one line, exit 78', async () => {
    const s = await scene();
    s.writeConfig({ temperature: 'hot' });
    for (const command of [['chat', 'hi'], ['start']]) {
      const out = await h.runCli([...command, '--agent', 'openai', '--home', s.home]);
      expect(out.code, out.stderr).to.equal(78);
      expect(out.stderr.trim()).to.equal(`turnhost ${command[0]}: ${join(s.home, 'agent.json')}: temperature: expected a number`);
    }
  });
});
