import { expect } from 'chai';
import { existsSync, readFileSync } from 'node:fs';
import {
  answerRequest,
  eventsOf,
  fixtureServer,
  modelScenes,
  nextServerRequest,
  runTurn,
  startModelHost,
  type ModelScene,
} from '../helpers/model-agent.js';
import { Harness, type HostProcess } from '../helpers/processes.js';

const allowAll = { default: 'allow' };

function mcpCalls(s: ModelScene): { event: string; tool: string; args?: Record<string, unknown> }[] {
  if (!existsSync(s.mcpLog)) return [];
  return readFileSync(s.mcpLog, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as { event: string; tool: string });
}

describe('model agent: tools, approvals and clarify (real host, fake model server, MCP fixture)', () => {
  const h = new Harness();
  const scenes = modelScenes(h);
  afterEach(scenes.cleanup);
  const scene = async (config: (s: ModelScene) => object) => {
    const s = await scenes.scene();
    s.writeConfig(config(s));
    return s;
  };

  const toolScene = (approval: object = allowAll, more: object = {}) =>
    scene((s) => ({ approval, mcp_servers: { t: fixtureServer(s) }, ...more }));

  it('runs the calls of one response (split across chunks) concurrently, sends results in call order, and replays them next turn', async () => {
    const s = await toolScene();
    s.fake.reply(
      {
        text: ['Let me check. '],
        toolCalls: [
          { id: 'call_a', name: 'mcp_t_add', args: ['{"a":', ' 2, "b"', ': 3}'] },
          { id: 'call_b', name: 'mcp_t_echo', args: ['{"text":"hi"}'] },
        ],
      },
      { text: ['The sum is 5.'] },
      { text: ['Again.'] },
    );
    const host = await startModelHost(h, s);
    const end = await runTurn(host, 's1', 'r1', 'add 2 and 3');
    expect(end.type).to.equal('turn.end');
    expect(end['usage']).to.deep.equal({ prompt_tokens: 22, completion_tokens: 14, calls: 2 });
    const offered = s.fake.requests[0]!.body.tools!.map((t) => t.function.name).sort();
    expect(offered).to.include.members(['clarify', 'mcp_t_add', 'mcp_t_echo', 'mcp_t_slow']);
    const starts = eventsOf(host, 's1', 'tool.start').map((e) => e.payload);
    expect(starts).to.deep.equal([
      { id: 'call_a', name: 'mcp_t_add', arguments: '{"a": 2, "b": 3}' },
      { id: 'call_b', name: 'mcp_t_echo', arguments: '{"text":"hi"}' },
    ]);
    const completes = eventsOf(host, 's1', 'tool.complete').map((e) => e.payload);
    expect(completes).to.have.deep.members([
      { id: 'call_a', ok: true, summary: '5' },
      { id: 'call_b', ok: true, summary: 'hi' },
    ]);
    const second = s.fake.requests[1]!.body.messages;
    expect(second.slice(1)).to.deep.equal([
      { role: 'user', content: 'add 2 and 3' },
      {
        role: 'assistant',
        content: 'Let me check. ',
        tool_calls: [
          { id: 'call_a', type: 'function', function: { name: 'mcp_t_add', arguments: '{"a": 2, "b": 3}' } },
          { id: 'call_b', type: 'function', function: { name: 'mcp_t_echo', arguments: '{"text":"hi"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_a', content: '5' },
      { role: 'tool', tool_call_id: 'call_b', content: 'hi' },
    ]);
    expect(mcpCalls(s).filter((c) => c.event === 'start').map((c) => c.tool).sort()).to.deep.equal(['add', 'echo']);
    // The next turn replays the stored calls and results exactly.
    await runTurn(host, 's1', 'r2', 'again');
    expect(s.fake.requests[2]!.body.messages.slice(1, 6)).to.deep.equal([...second.slice(1), { role: 'assistant', content: 'The sum is 5.' }]);
    // And after a restart, from the database.
    host.closeStdin();
    await host.waitExit();
    const restarted = await startModelHost(h, s);
    await runTurn(restarted, 's1', 'r3', 'third');
    expect(s.fake.requests[3]!.body.messages).to.deep.equal([...s.fake.requests[2]!.body.messages, { role: 'assistant', content: 'Again.' }, { role: 'user', content: 'third' }]);
    const json = JSON.parse((await h.runCli(['history', 's1', '--home', s.home, '--json'])).stdout) as Record<string, unknown>[];
    expect(json[1]!['tool_calls']).to.have.length(2);
    expect(json[2]).to.include({ role: 'tool', tool_call_id: 'call_a', content: '5' });
    const plain = (await h.runCli(['history', 's1', '--home', s.home])).stdout;
    expect(plain).to.include('[1] assistant: → mcp_t_add({"a": 2, "b": 3})');
    expect(plain).to.include('[2] tool: ← mcp_t_add: 5');
    expect(plain).to.include('[3] tool: ← mcp_t_echo: hi');
  });

  it('starts every call of a response before any of them ends (they run concurrently)', async () => {
    const s = await toolScene();
    const slow = (id: string) => ({ id, name: 'mcp_t_slow', args: ['{"seconds": 0.3}'] });
    s.fake.reply({ toolCalls: [slow('s1'), slow('s2'), slow('s3')] }, { text: ['rested'] });
    const host = await startModelHost(h, s);
    await runTurn(host, 's1', 'r1', 'rest');
    expect(mcpCalls(s).map((c) => c.event)).to.deep.equal(['start', 'start', 'start', 'end', 'end', 'end']);
  });

  it('a text steered in during a tool call reaches the next model request, after the tool results, and is stored there', async () => {
    const s = await toolScene();
    s.fake.reply({ toolCalls: [{ id: 'nap', name: 'mcp_t_slow', args: ['{"seconds": 3}'] }] }, { text: ['noted'] });
    const host = await startModelHost(h, s);
    host.send({ type: 'turn.start', sid: 's1', request_id: 'r1', text: 'take a nap' });
    await host.next('rpc', { where: (f) => (f['message'] as { params?: { type?: string } }).params?.type === 'tool.start' });
    host.send({ type: 'turn.start', sid: 's1', request_id: 'r2', text: 'and then say hi', on_busy: 'steer' });
    const steered = await host.nextOf(['turn.steered', 'turn.queued', 'turn.error'], { where: (f) => f['request_id'] === 'r2' });
    expect(steered.type).to.equal('turn.steered');
    const end = await host.ended('r1');
    expect(end.type).to.equal('turn.end');
    const second = s.fake.requests[1]!.body.messages.slice(-3).map((m) => m.role + (m.role === 'user' ? `:${m.content}` : ''));
    expect(second).to.deep.equal(['assistant', 'tool', 'user:and then say hi']);
    expect(host.all('turn.end', (f) => f['request_id'] === 'r2')).to.have.length(0);
    const history = (await h.runCli(['history', 's1', '--home', s.home, '--json'])).stdout;
    expect((JSON.parse(history) as { role: string }[]).map((m) => m.role)).to.deep.equal(['user', 'assistant', 'tool', 'user', 'assistant']);
  });

  it("a call past its server's timeout_s comes back to the model as an error result", async () => {
    const s = await scene((sc) => ({ approval: allowAll, mcp_servers: { t: fixtureServer(sc, { timeout_s: 0.3 }) } }));
    s.fake.reply({ toolCalls: [{ id: 'late', name: 'mcp_t_slow', args: ['{"seconds": 5}'] }] }, { text: ['gave up'] });
    const host = await startModelHost(h, s);
    const end = await runTurn(host, 's1', 'r1', 'wait');
    expect(end.type).to.equal('turn.end');
    const result = s.fake.requests[1]!.body.messages.find((m) => m.role === 'tool')!;
    expect(result.content).to.match(/^error: .*timed out/i);
  });

  it('tells calls apart by id when a server reuses index 0 for each call of a batch', async () => {
    const s = await toolScene();
    s.fake.reply(
      { reuseIndex: true, toolCalls: [ { id: 'x1', name: 'mcp_t_echo', args: ['{"text":', '"one"}'] }, { id: 'x2', name: 'mcp_t_echo', args: ['{"text":"two"}'] } ] },
      { text: ['done'] },
    );
    const host = await startModelHost(h, s);
    await runTurn(host, 's1', 'r1', 'echo twice');
    const results = s.fake.requests[1]!.body.messages.filter((m) => m.role === 'tool');
    expect(results).to.deep.equal([
      { role: 'tool', tool_call_id: 'x1', content: 'one' },
      { role: 'tool', tool_call_id: 'x2', content: 'two' },
    ]);
  });

  it('turns a tool error, an unknown tool and arguments that are not JSON into tool results; cuts a result over 64 KiB', async () => {
    const s = await toolScene();
    s.fake.reply(
      {
        toolCalls: [
          { id: 'c1', name: 'mcp_t_fail', args: ['{}'] },
          { id: 'c2', name: 'no_such_tool', args: ['{}'] },
          { id: 'c3', name: 'mcp_t_echo', args: ['{"text": '] },
          { id: 'c4', name: 'mcp_t_big', args: ['{"bytes": 70000}'] },
        ],
      },
      { text: ['recovered'] },
    );
    const host = await startModelHost(h, s);
    const end = await runTurn(host, 's1', 'r1', 'try things');
    expect(end.type).to.equal('turn.end');
    const results = s.fake.requests[1]!.body.messages.filter((m) => m.role === 'tool');
    expect(results.map((m) => m.tool_call_id)).to.deep.equal(['c1', 'c2', 'c3', 'c4']);
    expect(results[0]!.content).to.include('failed on purpose');
    expect(results[1]!.content).to.include('no tool named "no_such_tool"');
    expect(results[2]!.content).to.include('not valid');
    expect(Buffer.byteLength(results[3]!.content as string)).to.be.below(66 * 1024);
    expect(results[3]!.content).to.match(/\[result cut: 4464 of 70000 bytes left out\]$/);
    const oks = eventsOf(host, 's1', 'tool.complete').map((e) => [e.payload['id'], e.payload['ok']]);
    expect(oks).to.have.deep.members([['c1', false], ['c2', false], ['c3', false], ['c4', true]]);
  });

  it('asks before a tool whose policy is ask; runs it only when approved; denies without asking; never offers a denied tool', async () => {
    const s = await toolScene({ default: 'allow', ask: ['mcp_t_add'], deny: ['mcp_t_echo'] });
    const addCall = (id: string) => ({ toolCalls: [{ id, name: 'mcp_t_add', args: ['{"a":1,"b":1}'] }] });
    s.fake.reply(addCall('yes'), { text: ['ran'] }, addCall('no'), { text: ['refused'] }, { toolCalls: [{ id: 'd', name: 'mcp_t_echo', args: ['{"text":"x"}'] }] }, { text: ['ok'] });
    const host = await startModelHost(h, s);
    expect(s.fake.requests).to.have.length(0);
    host.send({ type: 'turn.start', sid: 's1', request_id: 'r1', text: 'add' });
    const question = await nextServerRequest(host, 's1');
    expect(question.method).to.equal('approval.request');
    expect(question.params).to.deep.include({ question: 'mcp_t_add({"a":1,"b":1})', tool: 'mcp_t_add', arguments: { a: 1, b: 1 } });
    await answerRequest(host, 's1', question.id, { approved: true });
    await host.next('turn.end', { where: (f) => f['request_id'] === 'r1' });
    expect(s.fake.requests[0]!.body.tools!.map((t) => t.function.name)).to.not.include('mcp_t_echo');
    expect(mcpCalls(s).filter((c) => c.event === 'start')).to.have.length(1);

    host.send({ type: 'turn.start', sid: 's1', request_id: 'r2', text: 'add again' });
    const second = await nextServerRequest(host, 's1');
    await answerRequest(host, 's1', second.id, { approved: false });
    await host.next('turn.end', { where: (f) => f['request_id'] === 'r2' });
    expect(mcpCalls(s).filter((c) => c.event === 'start')).to.have.length(1);
    const refusal = s.fake.requests[3]!.body.messages.find((m) => m.tool_call_id === 'no')!;
    expect(refusal.content).to.match(/^refused: the user did not approve/).and.include('Do not retry');

    await runTurn(host, 's1', 'r3', 'echo');
    const denied = s.fake.requests[5]!.body.messages.find((m) => m.tool_call_id === 'd')!;
    expect(denied.content).to.match(/^refused: the approval policy does not allow/);
    expect(host.all('rpc', (f) => (f['message'] as { method?: string }).method === 'approval.request')).to.have.length(2);
    expect(mcpCalls(s).filter((c) => c.tool === 'echo')).to.have.length(0);
  });

  it('clarify asks the clients (one question, then a batch) and hands the answers to the model', async () => {
    const s = await toolScene();
    s.fake.reply(
      { toolCalls: [{ id: 'q', name: 'clarify', args: ['{"question":"Which colour?","choices":["red","blue"]}'] }] },
      { toolCalls: [{ id: 'b', name: 'clarify', args: ['{"questions":[{"id":"size","question":"Size?"},{"question":"Shape?"}]}'] }] },
      { text: ['thanks'] },
    );
    const host = await startModelHost(h, s);
    host.send({ type: 'turn.start', sid: 's1', request_id: 'r1', text: 'paint' });
    const one = await nextServerRequest(host, 's1');
    expect(one.method).to.equal('clarify.request');
    expect(one.params).to.deep.include({ question: 'Which colour?', choices: ['red', 'blue'] });
    await answerRequest(host, 's1', one.id, { answer: 'blue' });
    const batch = await nextServerRequest(host, 's1');
    expect(batch.params['questions']).to.deep.equal([{ id: 'size', question: 'Size?' }, { id: 'q2', question: 'Shape?' }]);
    await answerRequest(host, 's1', batch.id, { answers: { size: 'L', q2: 'round' } });
    await host.next('turn.end');
    const results = s.fake.requests[2]!.body.messages.filter((m) => m.role === 'tool').map((m) => m.content);
    expect(results).to.deep.equal(['{"answer":"blue"}', '{"answers":{"size":"L","q2":"round"}}']);
  });

  it('ends a turn at max_tool_rounds model calls with a reply saying so (status.update kind limit)', async () => {
    const s = await toolScene(allowAll, { max_tool_rounds: 2 });
    s.fake.fallback = () => ({ toolCalls: [{ id: `c${Math.random()}`, name: 'mcp_t_echo', args: ['{"text":"again"}'] }] });
    const host = await startModelHost(h, s);
    const end = await runTurn(host, 's1', 'r1', 'loop forever');
    expect(end.type).to.equal('turn.end');
    expect(s.fake.requests).to.have.length(2);
    expect(eventsOf(host, 's1', 'status.update').map((e) => e.payload)).to.deep.include({ kind: 'limit', text: 'max_tool_rounds (2) reached' });
    expect(String(eventsOf(host, 's1', 'message.complete')[0]!.payload['text'])).to.include('limit of 2 model calls');
  });
});

describe('model agent: MCP servers (real host, fixture server)', () => {
  const h = new Harness();
  const scenes = modelScenes(h);
  afterEach(scenes.cleanup);
  const scene = async () => {
    const s = await scenes.scene();
    s.fake.fallback = () => ({ text: ['ok'] });
    return s;
  };
  const mcpNotes = (host: HostProcess, sid: string) => eventsOf(host, sid, 'status.update').filter((e) => e.payload['kind'] === 'mcp');

  it('reports a server that fails to start once per session and keeps working; reload.mcp re-reads the config and counts tools', async () => {
    const s = await scene();
    s.writeConfig({ approval: allowAll, mcp_servers: { bad: fixtureServer(s, {}, ['--fail-start']), good: fixtureServer(s, { tools: { include: ['e*', 'add'], exclude: ['env'] } }) } });
    const host = await startModelHost(h, s);
    await runTurn(host, 's1', 'r1', 'one');
    await runTurn(host, 's1', 'r2', 'two');
    await runTurn(host, 's2', 'r3', 'three');
    expect(mcpNotes(host, 's1')).to.have.length(1);
    expect(mcpNotes(host, 's2')).to.have.length(1);
    expect(String(mcpNotes(host, 's1')[0]!.payload['text'])).to.include('"bad"').and.include('failed to start');
    const offered = s.fake.requests[0]!.body.tools!.map((t) => t.function.name).sort();
    expect(offered).to.deep.equal(['clarify', 'mcp_good_add', 'mcp_good_echo']);

    s.writeConfig({ approval: allowAll, mcp_servers: { good: fixtureServer(s) } });
    host.send({ type: 'reload_mcp', sid: 's1', request_id: 'm1' });
    const ack = await host.next('reload_mcp.ack', { timeoutMs: 15_000 });
    expect((ack['response'] as { result: unknown }).result).to.deep.equal({ status: 'ok', servers: { good: { tools: 6 } } });
    await runTurn(host, 's1', 'r4', 'four');
    expect(s.fake.requests[3]!.body.tools).to.have.length(7);
    expect(mcpNotes(host, 's1')).to.have.length(1);
  });

  it('reports a server that dies; its tools are gone from later requests', async () => {
    const s = await scene();
    s.writeConfig({ approval: allowAll, mcp_servers: { dying: fixtureServer(s, {}, ['--die-after-start']) } });
    const host = await startModelHost(h, s);
    await host.logged(/MCP server \\"dying\\" exited|the MCP server "dying" exited/, 10_000);
    await runTurn(host, 's1', 'r1', 'one');
    expect(String(mcpNotes(host, 's1')[0]!.payload['text'])).to.include('"dying" exited');
    expect(s.fake.requests[0]!.body.tools!.map((t) => t.function.name)).to.deep.equal(['clarify']);
  });

  it('gives a server only PATH, HOME, LANG, TZ, TMPDIR, its own env and its sandbox\'s proxy', async () => {
    const s = await scene();
    s.writeConfig({ approval: allowAll, mcp_servers: { t: fixtureServer(s, { env: { OWN_SETTING: '1' } }) } });
    s.fake.reply({ toolCalls: [{ id: 'e', name: 'mcp_t_env', args: ['{}'] }] }, { text: ['ok'] });
    const host = await startModelHost(h, s, [], { OPENAI_API_KEY: 'sk-secret', USER: 'someone', SHELL: '/bin/sh', LANG: 'C.UTF-8' });
    await runTurn(host, 's1', 'r1', 'env');
    const names = JSON.parse(s.fake.requests[1]!.body.messages.find((m) => m.role === 'tool')!.content as string) as string[];
    const allowed = ['PATH', 'HOME', 'LANG', 'TZ', 'TMPDIR', 'OWN_SETTING', 'HTTPS_PROXY', 'HTTP_PROXY', 'NO_PROXY', 'https_proxy', 'http_proxy', 'no_proxy'];
    expect(names.filter((n) => !allowed.includes(n))).to.deep.equal([]);
    expect(names).to.include.members(['PATH', 'OWN_SETTING', 'LANG']);
  });
});
