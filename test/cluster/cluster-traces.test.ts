// One trace across every hop (PROTOCOL.md §5.8): a client's traceparent, given to a daemon's socket
// or to another node that forwards the prompt to the session's owner, parents the span
// of the turn that the owner's host runs.
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect, type TurnhostClient } from '../../client/index.js';
import { edgeUrl, nodeArgs } from '../helpers/cluster.js';
import { hostPid, startDaemon, TestClient } from '../helpers/daemon.js';
import { clientTrace, OtlpReceiver } from '../helpers/otlp-receiver.js';
import { postgresForSuite } from '../helpers/postgres.js';
import { Harness } from '../helpers/processes.js';

const LEASE_SECS = 2;
const QUICK_EXPORT = { OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_BSP_SCHEDULE_DELAY: '20' };

describe('traces on several nodes (real processes, one PostgreSQL, a real OTLP receiver)', function () {
  this.timeout(90_000);
  const h = new Harness();
  const server = postgresForSuite();
  const clients: (TurnhostClient | TestClient)[] = [];
  let otlp: OtlpReceiver | null = null;
  afterEach(async () => {
    for (const client of clients.splice(0)) client.close();
    await h.cleanup();
    await otlp?.close();
  });
  /** A node of the cluster at `url` that sends its spans to this test's receiver. */
  const tracedNode = (url: string, id: string) => startDaemon(h, [...nodeArgs(url, id, LEASE_SECS), '--listen', '127.0.0.1:0', '--otlp-endpoint', otlp!.endpoint], QUICK_EXPORT);

  it("a client's traceparent parents its turn's span: over a daemon's socket, and from a client of node b, forwarded to the owner a; no token is exported", async () => {
    otlp = await OtlpReceiver.start();
    const url = await server().database();
    const node = (id: string) => tracedNode(url, id);
    const a = await node('a');
    const b = await node('b');
    const alice = (await h.runCli(['user', 'add', 'alice', '--home', a.home, '--store', url])).stdout.trim();
    const onA = await connect({ url: await edgeUrl(a), token: alice });
    clients.push(onA);
    await onA.createSession({ session_id: 'shared' });

    const overSocket = clientTrace();
    const socket = await TestClient.connect(a);
    clients.push(socket);
    await socket.call('prompt.submit', { session_id: 'shared', text: 'over the socket', trace_context: { traceparent: overSocket.traceparent } });
    const first = await otlp.span((span) => span.name === 'invoke_agent script' && span.traceId === overSocket.traceId);
    expect(first.parentSpanId).to.equal(overSocket.spanId);
    expect(first.resource['turnhost.node_id']).to.equal('a');

    // REST is served by the node it reaches (docs/CLUSTER.md); a WebSocket client of b is forwarded to a.
    const overB = clientTrace();
    const onB = await connect({ url: await edgeUrl(b), token: alice });
    clients.push(onB);
    for await (const _ of onB.turn('shared', 'through b', { trace_context: { traceparent: overB.traceparent, tracestate: 'team=blue' } })) void _;
    const second = await otlp.span((span) => span.name === 'invoke_agent script' && span.traceId === overB.traceId);
    expect(second.parentSpanId).to.equal(overB.spanId);
    expect(second.resource['turnhost.node_id']).to.equal('a');
    expect(second.attributes).to.include({ 'gen_ai.conversation.id': 'shared', 'turnhost.by': 'alice', 'turnhost.outcome': 'completed' });

    const exported = otlp.exports.map((e) => e.body.toString('utf8')).join('\n');
    const secrets = [alice, ...[a.home, b.home].map((home) => readFileSync(join(home, 'http.token'), 'utf8').trim())];
    for (const secret of secrets) expect(exported).to.not.include(secret);
  });

  it("a turn lost with its node ends its span when another node takes the session over: error node_lost, under the client's trace and the ids it began with", async () => {
    otlp = await OtlpReceiver.start();
    const url = await server().database();
    const node = (id: string) => tracedNode(url, id);
    const a = await node('a');
    const b = await node('b');
    const onA = await TestClient.connect(a);
    clients.push(onA);
    await onA.call('session.create', { session_id: 'lost' });
    const client = clientTrace();
    const long = await onA.call<{ turn_id: string }>('prompt.submit', { session_id: 'lost', text: 'long\n/ask colour?', trace_context: { traceparent: client.traceparent } });
    await onA.until(() => onA.requests.length === 1, 'the question');
    for (const pid of [a.process.pid, await hostPid(onA)]) process.kill(pid, 'SIGKILL');
    await a.process.waitExit();

    const onB = await TestClient.connect(b);
    clients.push(onB);
    await onB.call('session.resume', { session_id: 'lost' });
    expect((await onB.nextEvent('turn.error', 'lost')).payload).to.include({ turn_id: long.turn_id, reason: 'node_lost' });
    const span = await otlp.span((s) => s.name === 'invoke_agent script' && s.attributes['turnhost.turn_id'] === long.turn_id);
    expect(span.traceId).to.equal(client.traceId);
    expect(span.parentSpanId).to.equal(client.spanId);
    expect(span.status.code).to.equal(2);
    expect(span.attributes).to.include({ 'error.type': 'node_lost', 'turnhost.outcome': 'lost' });
    expect(span.resource['turnhost.node_id']).to.equal('b');
  });
});
