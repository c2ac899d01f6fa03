import { expect } from 'chai';
import { storeRows } from '../helpers/test-store.js';
import { Harness, type Frame, type HostProcess } from '../helpers/processes.js';
import { seededRandom } from '../helpers/random.js';

interface ServerRequest {
  id: string;
  method: string;
  params: Record<string, unknown>;
}

const isServerRequest = (f: Frame, sid?: string) => {
  const m = f['message'] as { id?: unknown; method?: string };
  return typeof m.id === 'string' && m.id.startsWith('srq-') && (sid === undefined || f['sid'] === sid);
};

async function nextRequest(host: HostProcess, sid?: string): Promise<ServerRequest> {
  const frame = await host.next('rpc', { where: (f) => isServerRequest(f, sid) });
  return frame['message'] as ServerRequest;
}

function cancels(host: HostProcess, sid?: string): { id: string; method: string; reason: string }[] {
  return host
    .all('rpc', (f) => (sid === undefined || f['sid'] === sid) && (f['message'] as { params?: { type?: string } }).params?.type === 'request.cancel')
    .map((f) => (f['message'] as { params: { payload: { id: string; method: string; reason: string } } }).params.payload);
}

let counter = 0;
async function respond(host: HostProcess, sid: string, params: object): Promise<Frame> {
  const request_id = `resp-${++counter}`;
  host.send({ type: 'respond', sid, request_id, params });
  return host.nextOf(['respond.ack', 'respond.error'], { where: (f) => f['request_id'] === request_id });
}

const answer = (id: string, result: object) => ({ frame: { jsonrpc: '2.0', id, result } });

async function reply(host: HostProcess, sid: string): Promise<string> {
  const complete = await host.next('rpc', { where: (f) => f['sid'] === sid && JSON.stringify(f['message']).includes('"message.complete"') });
  return (complete['message'] as { params: { payload: { text: string } } }).params.payload.text;
}

async function requestRow(home: string, id: string): Promise<{ status: string; answers: string | null; reason: string | null }> {
  const [row] = await storeRows<{ status: string; answers: string | null; reason: string | null }>(home, 'SELECT status, answers, reason FROM server_requests WHERE id = ?', [id]);
  return row!;
}

describe('server requests (real host process)', function () {
  this.timeout(30_000);
  const h = new Harness();
  afterEach(() => h.cleanup());

  it('/ask: a clarify.request leaves as an rpc frame; the answer comes back and ends up in the reply', async () => {
    const home = h.tempDir();
    const host = await h.startHost(home);
    host.send({ type: 'turn.start', sid: 's1', request_id: 'r1', text: 'question time\n/ask favourite colour?' });
    const request = await nextRequest(host);
    expect(request.id).to.match(/^srq-[0-9a-f]{16}-[0-9a-z]+$/);
    expect(request).to.deep.include({ method: 'clarify.request', params: { session_id: 's1', question: 'favourite colour?' } });
    expect((await requestRow(home, request.id)).status).to.equal('open');
    const ack = await respond(host, 's1', answer(request.id, { answer: 'teal' }));
    expect(ack['response']).to.deep.equal({ jsonrpc: '2.0', id: ack['request_id'], result: { status: 'ok' } });
    expect(await reply(host, 's1')).to.equal('question time\nanswer: teal');
    expect(await requestRow(home, request.id)).to.include({ status: 'answered' });
    const late = await respond(host, 's1', answer(request.id, { answer: 'red' }));
    expect((late['response'] as { result: unknown }).result).to.deep.equal({ status: 'expired' });
  });

  it('/batch a | b | c: three locks resolve it; answers can change until the last lock; a bad question id is 4002', async () => {
    const host = await h.startHost(h.tempDir());
    host.send({ type: 'turn.start', sid: 's1', request_id: 'r1', text: '/batch name? | quest? | colour?' });
    const request = await nextRequest(host);
    expect((request.params['questions'] as { id: string }[]).map((q) => q.id)).to.deep.equal(['q0', 'q1', 'q2']);
    const lock = (question_id: string, value: string) => respond(host, 's1', { lock: { request_id: request.id, question_id, answer: value } });
    expect(((await lock('q1', 'the grail'))['response'] as { result: unknown }).result).to.deep.equal({ status: 'ok', remaining: ['q0', 'q2'] });
    expect(((await lock('q0', 'lancelot'))['response'] as { result: unknown }).result).to.deep.equal({ status: 'ok', remaining: ['q2'] });
    expect(((await lock('q0', 'arthur'))['response'] as { result: unknown }).result).to.deep.equal({ status: 'ok', remaining: ['q2'] });
    const bad = (await lock('q9', 'x'))['response'] as { error: { code: number; message: string } };
    expect(bad.error.code).to.equal(4002);
    expect(bad.error.message).to.equal('unknown question id: q9');
    expect(((await lock('q2', 'blue'))['response'] as { result: unknown }).result).to.deep.equal({ status: 'ok', remaining: [] });
    expect(await reply(host, 's1')).to.equal('answers: q0=arthur, q1=the grail, q2=blue');
    expect(((await lock('q2', 'yellow'))['response'] as { result: unknown }).result).to.deep.equal({ status: 'expired' });
  });

  it('/approve declined with an error member gives "denied"; approved gives "approved"', async () => {
    const host = await h.startHost(h.tempDir());
    host.send({ type: 'turn.start', sid: 's1', request_id: 'r1', text: '/approve rm -rf build' });
    const request = await nextRequest(host);
    expect(request).to.deep.include({ method: 'approval.request', params: { session_id: 's1', question: 'rm -rf build' } });
    await respond(host, 's1', { frame: { jsonrpc: '2.0', id: request.id, error: { code: 1, message: 'no way' } } });
    expect(await reply(host, 's1')).to.equal('denied: rm -rf build');
    host.send({ type: 'turn.start', sid: 's1', request_id: 'r2', text: '/approve deploy' });
    const second = await nextRequest(host);
    await respond(host, 's1', answer(second.id, { approved: true }));
    expect(await reply(host, 's1')).to.equal('approved: deploy');
  });

  it('an interrupt during an open /ask: one request.cancel, then turn.end interrupted; a later answer has expired', async () => {
    const home = h.tempDir();
    const host = await h.startHost(home);
    host.send({ type: 'turn.start', sid: 's1', request_id: 'r1', text: '/ask still there?' });
    const request = await nextRequest(host);
    host.send({ type: 'interrupt', sid: 's1', request_id: 'i1' });
    const ack = await host.next('interrupt.ack');
    const end = await host.next('turn.end');
    expect(end).to.include({ interrupted: true });
    expect(host.frames.indexOf(ack)).to.be.lessThan(host.frames.indexOf(end));
    expect(cancels(host)).to.deep.equal([{ id: request.id, method: 'clarify.request', reason: 'interrupted' }]);
    const late = await respond(host, 's1', answer(request.id, { answer: 'yes' }));
    expect((late['response'] as { result: unknown }).result).to.deep.equal({ status: 'expired' });
    expect(await requestRow(home, request.id)).to.include({ status: 'cancelled', reason: 'interrupted' });
  });

  it('/ask --timeout 1 unanswered: one request.cancel with reason timeout, and "answer: (none)"', async () => {
    const home = h.tempDir();
    const host = await h.startHost(home);
    host.send({ type: 'turn.start', sid: 's1', request_id: 'r1', text: '/ask --timeout 1 colour?' });
    const request = await nextRequest(host);
    const text = await reply(host, 's1');
    expect(text).to.equal('answer: (none)');
    expect(cancels(host)).to.deep.equal([{ id: request.id, method: 'clarify.request', reason: 'timeout' }]);
    expect(await requestRow(home, request.id)).to.include({ status: 'expired', reason: 'timeout' });
  });

  it('keeps locked batch answers through a timeout', async () => {
    const host = await h.startHost(h.tempDir());
    host.send({ type: 'turn.start', sid: 's1', request_id: 'r1', text: '/batch --timeout 1 first? | second?' });
    const request = await nextRequest(host);
    await respond(host, 's1', { lock: { request_id: request.id, question_id: 'q0', answer: 'kept' } });
    expect(await reply(host, 's1')).to.equal('answers: q0=kept, q1=(none)');
    expect(cancels(host).map((c) => c.reason)).to.deep.equal(['timeout']);
  });

  it('a shutdown cancels an open request with reason shutdown and stores it', async () => {
    const home = h.tempDir();
    const host = await h.startHost(home);
    host.send({ type: 'turn.start', sid: 's1', request_id: 'r1', text: '/ask anyone?' });
    const request = await nextRequest(host);
    host.send({ type: 'shutdown', request_id: 'bye', wait: 1 });
    expect((await host.next('shutdown.ack'))['retained']).to.deep.equal(['s1']);
    expect(cancels(host)).to.deep.equal([{ id: request.id, method: 'clarify.request', reason: 'shutdown' }]);
    expect((await host.waitExit()).code).to.equal(0);
    expect(await requestRow(home, request.id)).to.include({ status: 'cancelled', reason: 'shutdown' });
  });

  it('lists open requests with their age and session in debug requests', async () => {
    const host = await h.startHost(h.tempDir());
    host.send({ type: 'turn.start', sid: 's1', request_id: 'r1', text: '/ask one?' });
    const request = await nextRequest(host);
    host.send({ type: 'debug', request_id: 'd1', what: 'requests' });
    const result = (await host.next('debug.result'))['result'] as { id: string; sid: string; method: string; age_ms: number }[];
    expect(result).to.have.length(1);
    expect(result[0]).to.include({ id: request.id, sid: 's1', method: 'clarify.request' });
    expect(result[0]!.age_ms).to.be.a('number').at.least(0);
  });

  it('100 sessions each with an open /ask, answered in random order: every turn ends with its own answer (seeded)', async () => {
    const seed = 1129;
    const random = seededRandom(seed);
    const host = await h.startHost(h.tempDir(), ['--workers', '128']);
    const sids = Array.from({ length: 100 }, (_, i) => `many-${i}`);
    for (const sid of sids) host.send({ type: 'turn.start', sid, request_id: `r-${sid}`, text: `/ask what is ${sid}?` });
    const requests = new Map<string, ServerRequest>();
    for (const sid of sids) requests.set(sid, await nextRequest(host, sid));
    const order = sids.slice();
    for (let i = order.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
    for (const sid of order) host.send({ type: 'respond', sid, request_id: `a-${sid}`, params: answer(requests.get(sid)!.id, { answer: `answer for ${sid}` }) });
    for (const sid of sids) expect(await reply(host, sid), `seed ${seed}`).to.equal(`answer: answer for ${sid}`);
  });

  it('samples liveness about every second: activity_ns null until the agent emits in this turn', async () => {
    const host = await h.startHost(h.tempDir());
    const activity = (sid: string) =>
      host.next('rpc', {
        where: (f) => f['sid'] === sid && (f['message'] as { method?: string }).method === 'compute_host.activity',
        timeoutMs: 3000,
      });
    host.send({ type: 'turn.start', sid: 'quiet', request_id: 'r1', text: '/sleep 2.4' });
    const started = await host.next('turn.started', { where: (f) => f['sid'] === 'quiet' });
    const first = await activity('quiet');
    const second = await activity('quiet');
    for (const sample of [first, second]) {
      expect((sample['message'] as { params: unknown }).params).to.deep.equal({ session_id: 'quiet', turn_id: started['turn_id'], activity_ns: null });
    }
    const gapMs = (Number(second['host_ns']) - Number(first['host_ns'])) / 1e6;
    expect(gapMs).to.be.within(800, 1500);
    host.send({ type: 'turn.start', sid: 'chatty', request_id: 'r2', text: 'said something\n/sleep 1.4' });
    const chattyStart = await host.next('turn.started', { where: (f) => f['sid'] === 'chatty' });
    const sample = await activity('chatty');
    const deltas = host.all('rpc', (f) => f['sid'] === 'chatty' && JSON.stringify(f['message']).includes('message.delta'));
    const stamp = (sample['message'] as { params: { activity_ns: number } }).params.activity_ns;
    expect(stamp).to.be.a('number');
    expect(stamp).to.be.greaterThan(Number(chattyStart['started_ns']));
    // The stamp is taken as the agent emits, just before the writer stamps that frame's host_ns.
    expect(stamp).to.be.at.most(Number(deltas.at(-1)!['host_ns']));
    expect(stamp).to.be.greaterThan(Number(deltas[0]!['host_ns']) - 1e6);
  });
});
