import { expect } from 'chai';
import { connect } from 'node:net';
import { rpcError, startDaemon, TestClient, type Daemon } from '../helpers/daemon.js';
import { Harness } from '../helpers/processes.js';

/** A raw connection: lines in, lines out, for input no well-behaved client would send. */
async function rawLines(daemon: Daemon, lines: (string | Buffer)[], expected: number): Promise<Record<string, unknown>[]> {
  const socket = connect(daemon.socket);
  let buffer = '';
  const replies: Record<string, unknown>[] = [];
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`got ${replies.length} of ${expected} replies: ${buffer}`)), 10_000);
    socket.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('utf8');
      let at: number;
      while ((at = buffer.indexOf('\n')) !== -1) {
        replies.push(JSON.parse(buffer.slice(0, at)) as Record<string, unknown>);
        buffer = buffer.slice(at + 1);
      }
      if (replies.length >= expected) {
        clearTimeout(timer);
        resolve();
      }
    });
    socket.once('connect', () => {
      for (const line of lines) socket.write(line);
    });
  });
  socket.destroy();
  return replies;
}

describe('daemon: the client socket (real processes)', function () {
  this.timeout(30_000);
  const h = new Harness();
  let daemon: Daemon;
  beforeEach(async () => (daemon = await startDaemon(h, ['--workers', '16'])));
  afterEach(() => h.cleanup());

  it('runs a turn end to end: streaming result, then turn.started, deltas, message.complete and turn.end events', async () => {
    const client = await TestClient.connect(daemon);
    const created = await client.call('session.create', { session_id: 's1' });
    expect(created).to.deep.equal({ session_id: 's1', session_key: 's1' });
    const submitted = await client.call<{ status: string; turn_id: string }>('prompt.submit', { session_id: 's1', text: 'hello there' });
    expect(submitted.status).to.equal('streaming');
    const end = await client.nextEvent('turn.end', 's1');
    expect(end.payload).to.include({ turn_id: submitted.turn_id, interrupted: false, message_count: 2 });
    expect(client.events.map((e) => e.type)).to.deep.equal(['turn.started', 'message.delta', 'message.delta', 'message.complete', 'turn.end']);
    expect(client.reply('s1')).to.equal('hello there');
    const history = await client.call<{ messages: { seq: number; role: string }[] }>('session.history', { session_id: 's1' });
    expect(history.messages.map((m) => m.role)).to.deep.equal(['user', 'assistant']);
    const list = await client.call<{ sessions: Record<string, unknown>[] }>('session.list');
    expect(list.sessions[0]).to.include({ session_id: 's1', status: 'active', running: false, message_count: 2 });
    const status = await client.call<{ sessions: { active: number } }>('host.status');
    expect(status.sessions.active).to.equal(1);
  });

  it('answers with the errors of PROTOCOL.md §2', async () => {
    const client = await TestClient.connect(daemon);
    expect((await rpcError(client.call('no.such.method'))).code).to.equal(-32601);
    expect((await rpcError(client.call('slash.refine', { session_id: 's1' }))).code).to.equal(-32601);
    expect((await rpcError(client.call('prompt.submit', { session_id: 's1' }))).code).to.equal(-32602);
    expect((await rpcError(client.call('session.history', { session_id: 'ghost' }))).code).to.equal(4004);
    expect((await rpcError(client.call('session.resume', { session_id: 'ghost' }))).code).to.equal(4004);
    expect((await rpcError(client.call('slash.model', { session_id: 'ghost', model: 'm' }))).code).to.equal(4004);
    await client.call('prompt.submit', { session_id: 's1', text: '/sleep 30' });
    await client.nextEvent('turn.started', 's1');
    expect((await rpcError(client.call('prompt.submit', { session_id: 's1', text: 'again', on_busy: 'reject' }))).code).to.equal(4009);
    expect((await rpcError(client.call('slash.model', { session_id: 's1', model: 'm' }))).code).to.equal(4009);
    const saved = await client.call('session.save', { session_id: 's1' });
    expect(saved).to.include({ saved: 0, message_count: 1 });
    const running = await client.call<{ sessions: { session_id: string; running: boolean }[] }>('session.list');
    expect(running.sessions.find((s) => s.session_id === 's1')!.running).to.equal(true);
    expect(await client.call('session.interrupt', { session_id: 's1' })).to.deep.equal({ applied: true });
    expect((await client.nextEvent('turn.end', 's1')).payload).to.include({ interrupted: true });
    const model = await client.call('slash.model', { session_id: 's1', model: 'm2' });
    expect(model).to.include({ output: 'model set to m2', session_key: 's1' });
  });

  it('sends events and server requests to every attached client; the first answer wins', async () => {
    const a = await TestClient.connect(daemon);
    const b = await TestClient.connect(daemon);
    await a.call('session.create', { session_id: 'shared' });
    await a.call('prompt.submit', { session_id: 'shared', text: 'warm up' });
    await a.nextEvent('turn.end', 'shared');
    await b.call('session.resume', { session_id: 'shared' });
    await a.call('prompt.submit', { session_id: 'shared', text: 'both see this\n/ask who answers?' });
    await a.until(() => a.requests.length === 1, 'a server request on a');
    await b.until(() => b.requests.length === 1, 'a server request on b');
    expect(b.requests[0]!.id).to.equal(a.requests[0]!.id);
    const resumed = await b.call<{ running: boolean; open_requests: { id: string }[] }>('session.resume', { session_id: 'shared' });
    expect(resumed.running).to.equal(true);
    expect(resumed.open_requests.map((r) => r.id)).to.deep.equal([a.requests[0]!.id]);
    a.rpc.respond(a.requests[0]!.id, { result: { answer: 'a was first' } });
    await b.nextEvent('turn.end', 'shared', (e) => e.payload['message_count'] === 4);
    expect(await b.call('request.answer', { request_id: b.requests[0]!.id, result: { answer: 'b was late' } })).to.deep.equal({ status: 'expired' });
    expect(b.reply('shared')).to.equal('both see this\nanswer: a was first');
    expect(a.events.some((e) => e.type === 'message.delta' && e.payload['text'] === ' this')).to.equal(true);
  });

  it('locks batch answers through the socket, and rejects an unknown question with 4002', async () => {
    const client = await TestClient.connect(daemon);
    await client.call('session.create', { session_id: 's1' });
    await client.call('prompt.submit', { session_id: 's1', text: '/batch one? | two?' });
    await client.until(() => client.requests.length === 1, 'the batch question');
    const id = client.requests[0]!.id;
    expect(await client.call('clarify.lock', { request_id: id, question_id: 'q1', answer: 'B' })).to.deep.equal({ status: 'ok', remaining: ['q0'] });
    expect((await rpcError(client.call('clarify.lock', { request_id: id, question_id: 'q7', answer: 'x' }))).code).to.equal(4002);
    expect(await client.call('clarify.lock', { request_id: id, question_id: 'q0', answer: 'A' })).to.deep.equal({ status: 'ok', remaining: [] });
    await client.nextEvent('turn.end', 's1');
    expect(client.reply('s1')).to.equal('answers: q0=A, q1=B');
    expect(await client.call('clarify.lock', { request_id: id, question_id: 'q0', answer: 'late' })).to.deep.equal({ status: 'expired' });
  });

  it('never forwards compute_host.activity to clients', async () => {
    const client = await TestClient.connect(daemon);
    await client.call('session.create', { session_id: 's1' });
    await client.call('prompt.submit', { session_id: 's1', text: 'slow\n/sleep 2.2' });
    await client.nextEvent('turn.end', 's1');
    expect(client.events.map((e) => e.type)).to.not.include('compute_host.activity');
    expect(client.events.every((e) => typeof e.type === 'string')).to.equal(true);
  });

  it('answers malformed input with JSON-RPC errors and keeps the connection and the daemon going', async () => {
    const huge = Buffer.alloc(9 * 1024 * 1024, 'x');
    const replies = await rawLines(
      daemon,
      ['this is not json\n', '[1,2]\n', '{"id":1,"method":"host.status"}\n', '{"jsonrpc":"2.0","id":2,"method":"session.list","params":[]}\n', huge, '\n', '{"jsonrpc":"2.0","id":3,"method":"host.status"}\n'],
      6,
    );
    expect(replies.map((r) => (r['error'] as { code: number } | undefined)?.code ?? 'ok')).to.deep.equal([-32700, -32600, -32600, -32602, -32600, 'ok']);
    expect(replies[5]!['id']).to.equal(3);
  });

  it('keeps a turn running when its client disconnects mid-turn; other clients are unaffected', async () => {
    const leaver = await TestClient.connect(daemon);
    const watcher = await TestClient.connect(daemon);
    await leaver.call('session.create', { session_id: 'left' });
    await watcher.call('session.create', { session_id: 'other' });
    await leaver.call('prompt.submit', { session_id: 'left', text: 'still runs\n/sleep 0.5' });
    await leaver.nextEvent('turn.started', 'left');
    await watcher.call('session.resume', { session_id: 'left' });
    leaver.close();
    await watcher.call('prompt.submit', { session_id: 'other', text: 'unaffected' });
    await watcher.nextEvent('turn.end', 'other');
    await watcher.nextEvent('turn.end', 'left');
    const history = await watcher.call<{ messages: { content: string }[] }>('session.history', { session_id: 'left' });
    expect(history.messages.map((m) => m.content)).to.deep.equal(['still runs\n/sleep 0.5', 'still runs']);
  });

  it('refuses new work with 4010 while the daemon stops', async () => {
    const client = await TestClient.connect(daemon);
    await client.call('session.create', { session_id: 'slow' });
    await client.call('prompt.submit', { session_id: 'slow', text: '/sleep 30' });
    await client.nextEvent('turn.started', 'slow');
    const stopping = client.call('daemon.shutdown', { wait: 2 });
    await daemon.process.logged(/"msg":"stopping: coordinated shutdown of the host"/);
    expect((await rpcError(client.call('prompt.submit', { session_id: 'other', text: 'too late' }))).code).to.equal(4010);
    expect(await stopping).to.deep.equal({ finalized: 0, retained: 1 });
  });

  it('daemon.shutdown answers with the counts, then the daemon exits 0', async () => {
    const client = await TestClient.connect(daemon);
    await client.call('session.create', { session_id: 's1' });
    await client.call('prompt.submit', { session_id: 's1', text: 'done' });
    await client.nextEvent('turn.end', 's1');
    expect(await client.call('daemon.shutdown', { wait: 2 })).to.deep.equal({ finalized: 1, retained: 0 });
    expect((await daemon.process.waitExit(10_000)).code).to.equal(0);
  });
});
