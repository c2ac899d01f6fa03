import { HttpAgent } from '@ag-ui/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { expect } from 'chai';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startDaemon } from '../helpers/daemon.js';
import { httpRequest } from '../helpers/http.js';
import { guestArgs, guestScene } from '../helpers/guests.js';
import { answerRequest, eventsOf, fixtureServer, modelScenes, nextServerRequest, startModelHost, text } from '../helpers/model-agent.js';
import { clientTrace, OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js';
import { Harness } from '../helpers/processes.js';

/** The model key the host is given: no exported span may hold it. */
const MODEL_KEY = 'sk-trace-test-0f9e8d7c6b5a';
/** Spans leave within a few milliseconds, so a test waits on what arrives, not on a batch timer. */
const QUICK_EXPORT = { OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_BSP_SCHEDULE_DELAY: '20', OPENAI_API_KEY: MODEL_KEY };

const childrenOf = (spans: readonly ReceivedSpan[], parent: ReceivedSpan) => spans.filter((s) => s.parentSpanId === parent.spanId);

describe('traces: OpenTelemetry spans of turns, model calls, tools and questions (PROTOCOL.md §5.8; a real OTLP receiver)', () => {
  const h = new Harness();
  const scenes = modelScenes(h);
  const receivers: OtlpReceiver[] = [];
  afterEach(async () => {
    await scenes.cleanup();
    await Promise.all(receivers.splice(0).map((r) => r.close()));
  });
  const receiver = async () => {
    const r = await OtlpReceiver.start();
    receivers.push(r);
    return r;
  };

  it("a turn is an invoke_agent span under the client's traceparent, with its model calls, its tool call, its question and its queue wait as children; the model server gets the chat span as traceparent; no content, no key", async () => {
    const otlp = await receiver();
    const s = await scenes.scene();
    s.writeConfig({ approval: { default: 'ask' }, mcp_servers: { t: fixtureServer(s) } });
    s.fake.reply(
      { text: ['Adding. '], toolCalls: [{ id: 'call_a', name: 'mcp_t_add', args: ['{"a":2,"b":3}'] }], usage: { prompt_tokens: 10, completion_tokens: 4 } },
      { text: ['The sum is 5.'], usage: { prompt_tokens: 20, completion_tokens: 6, prompt_tokens_details: { cached_tokens: 8 } } },
      { text: ['Second.'] },
    );
    const host = await startModelHost(h, s, ['--otlp-endpoint', otlp.endpoint], QUICK_EXPORT);
    const client = clientTrace();
    host.send({ type: 'turn.start', sid: 's1', request_id: 'r1', text: 'add two and three, privately', by: 'alice', trace_context: { traceparent: client.traceparent } });
    const question = await nextServerRequest(host, 's1');
    // A second prompt waits in the session's queue while the first waits for its answer.
    host.send({ type: 'turn.start', sid: 's1', request_id: 'r2', text: 'again', on_busy: 'queue' });
    await host.next('turn.queued', { where: (f) => f['request_id'] === 'r2' });
    await answerRequest(host, 's1', question.id, { approved: true });
    const end = await host.ended('r1');
    expect(end.type).to.equal('turn.end');
    await host.ended('r2');

    const turn = await otlp.span((span) => span.name === 'invoke_agent openai' && span.attributes['turnhost.turn_id'] === end['turn_id']);
    expect(turn.traceId).to.equal(client.traceId);
    expect(turn.parentSpanId).to.equal(client.spanId);
    expect(turn.status.code).to.not.equal(2);
    expect(turn.attributes).to.deep.include({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': 'openai',
      'gen_ai.conversation.id': 's1',
      'turnhost.by': 'alice',
      'turnhost.outcome': 'completed',
      'gen_ai.usage.input_tokens': 30,
      'gen_ai.usage.output_tokens': 10,
    });
    expect(turn.resource['service.name']).to.equal('turnhost');

    const spans = await otlp.trace(client.traceId, (span) => span.name === 'chat test-model' && span.attributes['gen_ai.usage.input_tokens'] === 20);
    // Its own wait (for its session to open) may have taken a millisecond: the queued turn below shows that span.
    const children = childrenOf(spans, turn).filter((c) => c.name !== 'turnhost.queue');
    expect(children.map((c) => c.name).sort()).to.deep.equal(['chat test-model', 'chat test-model', 'execute_tool mcp_t_add', 'turnhost.request approval.request']);
    const [firstChat, secondChat] = children.filter((c) => c.name.startsWith('chat')).sort((a, b) => a.startMs - b.startMs);
    expect(firstChat!.attributes).to.deep.include({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'test-model',
      'gen_ai.response.model': 'test-model',
      'gen_ai.response.finish_reasons': ['tool_calls'],
      'gen_ai.usage.input_tokens': 10,
      'gen_ai.usage.output_tokens': 4,
      'server.address': '127.0.0.1',
    });
    expect(secondChat!.attributes).to.deep.include({ 'gen_ai.response.finish_reasons': ['stop'], 'gen_ai.usage.cache_read.input_tokens': 8 });
    const tool = children.find((c) => c.name === 'execute_tool mcp_t_add')!;
    expect(tool.attributes).to.deep.include({ 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'mcp_t_add', 'gen_ai.tool.call.id': 'call_a' });
    expect(tool.attributes).to.not.have.property('gen_ai.tool.call.arguments');
    const asked = children.find((c) => c.name === 'turnhost.request approval.request')!;
    expect(asked.attributes).to.include({ 'turnhost.request.outcome': 'answered', 'turnhost.request.id': question.id });
    expect(asked.attributes['turnhost.request.wait_ms']).to.be.a('number');
    // The model server was told which call it served.
    const sent = s.fake.requests.slice(0, 2).map((r) => r.headers['traceparent']);
    expect(sent).to.deep.equal([firstChat, secondChat].map((c) => `00-${client.traceId}-${c!.spanId}-01`));

    // The queued prompt's turn: a trace of its own, its wait in the queue its first child.
    const queued = await otlp.span((span) => span.name === 'invoke_agent openai' && span.attributes['turnhost.turn_id'] !== end['turn_id']);
    expect(queued.parentSpanId).to.equal('');
    const wait = await otlp.span((span) => span.name === 'turnhost.queue' && span.parentSpanId === queued.spanId);
    expect(wait.startMs).to.equal(queued.startMs);
    expect(wait.attributes['turnhost.queue.wait_ms']).to.be.greaterThan(0);

    const exported = otlp.exports.map((e) => e.body.toString('utf8')).join('\n');
    for (const secret of [MODEL_KEY, 'privately', 'The sum is 5', '"a":2']) expect(exported, secret).to.not.include(secret);
  });

  it('with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true the prompt, the reply and the tool arguments and result are recorded; the key still is not', async () => {
    const otlp = await receiver();
    const s = await scenes.scene();
    s.writeConfig({ approval: { default: 'allow' }, mcp_servers: { t: fixtureServer(s) } });
    s.fake.reply({ toolCalls: [{ id: 'call_e', name: 'mcp_t_echo', args: ['{"text":"hello"}'] }] }, { text: ['Echoed.'] });
    const host = await startModelHost(h, s, ['--otlp-endpoint', otlp.endpoint], { ...QUICK_EXPORT, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true' });
    host.send({ type: 'turn.start', sid: 's1', request_id: 'r1', text: 'echo hello' });
    expect((await host.ended('r1')).type).to.equal('turn.end');
    const turn = await otlp.span((span) => span.name === 'invoke_agent openai');
    expect(JSON.parse(String(turn.attributes['gen_ai.input.messages']))).to.deep.equal([{ role: 'user', parts: [{ type: 'text', content: 'echo hello' }] }]);
    expect(JSON.parse(String(turn.attributes['gen_ai.output.messages']))).to.deep.equal([{ role: 'assistant', parts: [{ type: 'text', content: 'Echoed.' }] }]);
    const tool = await otlp.span((span) => span.name === 'execute_tool mcp_t_echo');
    expect(tool.attributes).to.include({ 'gen_ai.tool.call.arguments': '{"text":"hello"}' });
    expect(String(tool.attributes['gen_ai.tool.call.result'])).to.include('hello');
    expect(otlp.exports.map((e) => e.body.toString('utf8')).join('\n')).to.not.include(MODEL_KEY);
  });

  it("a turn lost to kill -9 ends its span with an error when the host recovers it: the span its model call was exported under, in the client's trace", async () => {
    const otlp = await receiver();
    const s = await scenes.scene();
    s.fake.reply({ text: ['Thinking. '], toolCalls: [{ id: 'call_s', name: 'clarify', args: ['{"question":"which?"}'] }] });
    const host = await startModelHost(h, s, ['--otlp-endpoint', otlp.endpoint], QUICK_EXPORT);
    const client = clientTrace();
    host.send({ type: 'turn.start', sid: 's1', request_id: 'r1', text: 'plan', trace_context: client.traceparent });
    await nextServerRequest(host, 's1');
    const chat = await otlp.span((span) => span.name === 'chat test-model' && span.traceId === client.traceId);
    host.kill('SIGKILL');
    await host.waitExit();

    const again = await startModelHost(h, s, ['--otlp-endpoint', otlp.endpoint], QUICK_EXPORT);
    const lost = await otlp.span((span) => span.name === 'invoke_agent openai' && span.spanId === chat.parentSpanId);
    expect(lost.traceId).to.equal(client.traceId);
    expect(lost.parentSpanId).to.equal(client.spanId);
    expect(lost.status.code).to.equal(2);
    expect(lost.attributes).to.include({ 'error.type': 'crash', 'turnhost.outcome': 'lost', 'gen_ai.conversation.id': 's1' });
    expect(lost.startMs).to.be.at.most(chat.startMs);
    again.kill('SIGKILL');
  });

  it('the default protocol is http/protobuf, from OTEL_EXPORTER_OTLP_ENDPOINT, with OTEL_EXPORTER_OTLP_HEADERS; a collector that is down costs the turns nothing and is logged once', async () => {
    const otlp = await receiver();
    const headers = 'authorization=Bearer collector-key-5e6f,x-team=blue';
    const proto = await h.startHost(h.tempDir(), [], { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint, OTEL_EXPORTER_OTLP_HEADERS: headers, OTEL_BSP_SCHEDULE_DELAY: '20', OTEL_SERVICE_NAME: 'team-host', TURNHOST_LOG_LEVEL: 'debug' });
    expect((await proto.turn('s1', 'r1', 'hello')).type).to.equal('turn.end');
    const sent = await otlp.protobufExport();
    expect(sent.body.includes('invoke_agent script')).to.equal(true);
    expect(sent.body.includes('team-host')).to.equal(true);
    expect(sent.headers).to.include({ authorization: 'Bearer collector-key-5e6f', 'x-team': 'blue' });
    expect(proto.stderr).to.include('tracing: spans go to an OTLP collector');
    expect(proto.stderr).to.not.include('collector-key-5e6f');
    proto.kill('SIGKILL');

    const down = await receiver();
    const endpoint = down.endpoint;
    await down.close();
    const host = await h.startHost(h.tempDir(), ['--otlp-endpoint', endpoint], { OTEL_BSP_SCHEDULE_DELAY: '20', OTEL_EXPORTER_OTLP_TIMEOUT: '1000', TURNHOST_LOG_LEVEL: 'info' });
    for (let i = 0; i < 20; i++) expect((await host.turn(`s${i}`, `r${i}`, 'hello')).type).to.equal('turn.end');
    await host.logged(/tracing: could not export spans/);
    // More spans, and a stop that sends them: a second export fails, within the minute of the first warning.
    for (let i = 20; i < 40; i++) expect((await host.turn(`s${i}`, `r${i}`, 'hello')).type).to.equal('turn.end');
    host.kill('SIGTERM');
    expect((await host.waitExit()).code).to.equal(0);
    expect(host.stderr.match(/tracing: could not export spans/g)).to.have.length(1);
  });

  it("with several agents (AGENT.md §8), a turn's span is named for its session's agent, the catalogue's name", async () => {
    const otlp = await receiver();
    const dir = h.tempDir();
    writeFileSync(join(dir, 'agent.json'), JSON.stringify({ agents: { quick: { kind: 'script' }, other: { kind: 'script' } } }));
    const host = await h.startHost(join(dir, 'home'), ['--agent-config', join(dir, 'agent.json'), '--otlp-endpoint', otlp.endpoint], QUICK_EXPORT);
    host.send({ type: 'session.create', sid: 's-other', request_id: 'c1', agent: 'other' });
    await host.next('control.ack');
    expect((await host.turn('s-other', 'r1', 'hello')).type).to.equal('turn.end');
    expect((await host.turn('s-quick', 'r2', 'hello')).type).to.equal('turn.end');
    const other = await otlp.span((span) => span.attributes['gen_ai.conversation.id'] === 's-other');
    const quick = await otlp.span((span) => span.attributes['gen_ai.conversation.id'] === 's-quick');
    expect([other.name, other.attributes['gen_ai.agent.name']]).to.deep.equal(['invoke_agent other', 'other']);
    expect([quick.name, quick.attributes['gen_ai.agent.name']], 'a session made by its first turn has the default').to.deep.equal(['invoke_agent quick', 'quick']);
    host.kill('SIGKILL');
  });

  it('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is used as it is, and wins over OTEL_EXPORTER_OTLP_ENDPOINT', async () => {
    const traces = await receiver();
    const general = await receiver();
    const host = await h.startHost(h.tempDir(), [], {
      ...QUICK_EXPORT,
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${traces.endpoint}/v1/traces`,
      OTEL_EXPORTER_OTLP_ENDPOINT: general.endpoint,
      TURNHOST_LOG_LEVEL: 'info',
    });
    expect((await host.turn('s1', 'r1', 'hello')).type).to.equal('turn.end');
    const span = await traces.span((s) => s.name === 'invoke_agent script');
    expect(span.attributes).to.include({ 'gen_ai.conversation.id': 's1' });
    expect(general.exports, 'the general endpoint got nothing').to.deep.equal([]);
    const said = JSON.parse(host.stderr.split('\n').find((line) => line.includes('spans go to an OTLP collector'))!) as { endpoint: string };
    expect(said.endpoint, 'the log names the endpoint the spans go to').to.equal(`${traces.endpoint}/v1/traces`);
    host.kill('SIGKILL');
  });

  it("the traceparent header parents the turn's span on REST, AG-UI, A2A and MCP (through the daemon); a traceparent that is not W3C's is dropped, and the turn runs", async () => {
    const otlp = await receiver();
    const token = 'trace-test-token-0123456789abcdef';
    const daemon = await startDaemon(h, ['--listen', '127.0.0.1:0', '--otlp-endpoint', otlp.endpoint], { ...QUICK_EXPORT, TURNHOST_TOKEN: token });
    const url = (JSON.parse((await h.runCli(['status', '--home', daemon.home, '--json'])).stdout) as { http: { url: string } }).http.url;
    const port = Number(new URL(url).port);
    const post = (path: string, body: object, headers: Record<string, string>) =>
      httpRequest(port, { method: 'POST', path, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers }, body });

    expect((await post('/v1/sessions', { session_id: 'rest' }, {})).status).to.equal(201);
    const overRest = clientTrace();
    expect((await post('/v1/sessions/rest/prompts', { text: 'over REST' }, { traceparent: overRest.traceparent })).status).to.equal(202);
    const rest = await otlp.span((span) => span.traceId === overRest.traceId && span.name === 'invoke_agent script');
    expect(rest.parentSpanId).to.equal(overRest.spanId);

    const overAgUi = clientTrace();
    const agent = new HttpAgent({ url: `${url}/v1/ag-ui`, headers: { authorization: `Bearer ${token}`, traceparent: overAgUi.traceparent }, threadId: 'ag' });
    agent.addMessage({ id: 'u1', role: 'user', content: 'over AG-UI' });
    await agent.runAgent({ runId: 'run-1' });
    const agUi = await otlp.span((span) => span.traceId === overAgUi.traceId && span.name === 'invoke_agent script');
    expect(agUi.parentSpanId).to.equal(overAgUi.spanId);
    expect(agUi.attributes['gen_ai.conversation.id']).to.equal('ag');

    const agentUrl = (JSON.parse((await httpRequest(port, { path: '/.well-known/agent-card.json' })).text) as { supportedInterfaces: { url: string }[] }).supportedInterfaces[0]!.url;
    const overA2a = clientTrace();
    const a2a = await post(new URL(agentUrl).pathname, { jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: { kind: 'message', messageId: 'a2a-1', role: 'user', parts: [{ kind: 'text', text: 'over A2A' }] } } }, { traceparent: overA2a.traceparent });
    expect(a2a.status, a2a.text).to.equal(200);
    expect((await otlp.span((span) => span.traceId === overA2a.traceId && span.name === 'invoke_agent script')).parentSpanId).to.equal(overA2a.spanId);
    const overMcp = clientTrace();
    const mcp = new Client({ name: 'trace-test', version: '1.0.0' });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}`, traceparent: overMcp.traceparent } } }));
    await mcp.callTool({ name: 'run', arguments: { prompt: 'over MCP' } });
    await mcp.close();
    expect((await otlp.span((span) => span.traceId === overMcp.traceId && span.name === 'invoke_agent script')).parentSpanId).to.equal(overMcp.spanId);

    const bad = await post('/v1/sessions/rest/prompts', { text: 'a bad traceparent' }, { traceparent: '00-zzzz-not-a-trace-01' });
    expect(bad.status, bad.text).to.equal(202);
    const turnId = (bad.json() as { turn_id: string }).turn_id;
    const root = await otlp.span((span) => span.attributes['turnhost.turn_id'] === turnId);
    expect(root.parentSpanId).to.equal('');
    expect(otlp.exports.map((e) => e.body.toString('utf8')).join('\n')).to.not.include(token);
  });

  it("a guest's tool call is an execute_tool span named for its kind, and the guest gets the turn's span as session/prompt's _meta.traceparent", async () => {
    const otlp = await receiver();
    const scene = guestScene(h);
    const host = await h.startHost(scene.home, [...guestArgs(scene), '--otlp-endpoint', otlp.endpoint], QUICK_EXPORT);
    const client = clientTrace();
    host.send({ type: 'turn.start', sid: 'g', request_id: 'r1', text: 'tool make x', trace_context: client.traceparent });
    const question = await nextServerRequest(host, 'g');
    await answerRequest(host, 'g', question.id, { approved: true });
    const end = await host.ended('r1');
    expect(end.type).to.equal('turn.end');
    const turn = await otlp.span((span) => span.name === 'invoke_agent acp' && span.traceId === client.traceId);
    const tool = await otlp.span((span) => span.name === 'execute_tool acp_execute' && span.parentSpanId === turn.spanId);
    const [started] = eventsOf(host, 'g', 'tool.start');
    expect(tool.attributes).to.include({ 'gen_ai.tool.name': 'acp_execute', 'gen_ai.tool.call.id': started!.payload['id'] });
    expect(tool.status.code).to.not.equal(2);
    await otlp.span((span) => span.name === 'turnhost.request approval.request' && span.parentSpanId === turn.spanId);

    host.send({ type: 'turn.start', sid: 'g', request_id: 'r2', text: 'traceparent' });
    expect((await host.ended('r2')).type).to.equal('turn.end');
    const second = await otlp.span((span) => span.name === 'invoke_agent acp' && span.attributes['turnhost.turn_id'] !== end['turn_id']);
    expect(text(host, 'g')).to.include(`00-${second.traceId}-${second.spanId}-01`);
    host.kill('SIGKILL');
  });

  it("OTEL_TRACES_SAMPLER is the SDK's: with parentbased_always_off a turn is recorded only under a client's sampled trace", async () => {
    const otlp = await receiver();
    const host = await h.startHost(h.tempDir(), ['--otlp-endpoint', otlp.endpoint], { ...QUICK_EXPORT, OTEL_TRACES_SAMPLER: 'parentbased_always_off' });
    const alone = await host.turn('s1', 'r1', 'no trace of its own');
    const client = clientTrace();
    const traced = await host.turn('s1', 'r2', 'under the client', { trace_context: client.traceparent });
    const span = await otlp.span((s) => s.traceId === client.traceId && s.name === 'invoke_agent script');
    expect(span.attributes['turnhost.turn_id']).to.equal(traced['turn_id']);
    // Spans leave in the order they ended: the first turn's would have come with or before it.
    expect(otlp.spans.filter((s) => s.attributes['turnhost.turn_id'] === alone['turn_id'])).to.deep.equal([]);
    host.kill('SIGKILL');
  });
});
