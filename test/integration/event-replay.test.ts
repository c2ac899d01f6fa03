import { expect } from 'chai';
import { startDaemon, TestClient } from '../helpers/daemon.js';
import { Harness } from '../helpers/processes.js';

const deltas = (client: TestClient, sid: string) =>
  client.events
    .filter((e) => e.session_id === sid && e.type === 'message.delta')
    .map((e) => String(e.payload['text']))
    .join('');

describe('event sequence and replay on resume (real processes)', function () {
  this.timeout(40_000);
  const h = new Harness();
  afterEach(() => h.cleanup());

  it('numbers every event per session, and a client that drops mid-turn and resumes with its last seq misses nothing', async () => {
    const daemon = await startDaemon(h, ['--agent', 'test/fixtures/streaming-agent.mjs']);
    const first = await TestClient.connect(daemon);
    await first.call('session.create', { session_id: 'long' });
    await first.call('prompt.submit', { session_id: 'long', text: 'stream 200 2' });
    await first.until(() => first.events.filter((e) => e.type === 'message.delta').length >= 50, '50 deltas');
    first.close();
    const before = deltas(first, 'long');
    const lastSeq = first.events.at(-1)!.seq;
    expect(first.events.map((e) => e.seq)).to.deep.equal(Array.from({ length: first.events.length }, (_, i) => i + 1));

    const second = await TestClient.connect(daemon);
    const resumed = await second.call<{ replay: string; last_seq: number; running: boolean }>('session.resume', { session_id: 'long', after_seq: lastSeq });
    expect(resumed.replay).to.equal('complete');
    await second.nextEvent('turn.end', 'long');
    const seqs = second.events.map((e) => e.seq);
    expect(seqs).to.deep.equal(Array.from({ length: seqs.length }, (_, i) => lastSeq + 1 + i));
    const expected = Array.from({ length: 200 }, (_, i) => `part ${i + 1} `).join('');
    expect(before + deltas(second, 'long')).to.equal(expected);
  });

  it('a client that reconnects while an /ask is open gets the question again, and its answer resolves the turn', async () => {
    const daemon = await startDaemon(h);
    const first = await TestClient.connect(daemon);
    await first.call('session.create', { session_id: 'q' });
    await first.call('prompt.submit', { session_id: 'q', text: 'before\n/ask still there?' });
    await first.until(() => first.requests.length === 1, 'the question');
    const lastSeq = first.events.at(-1)!.seq;
    first.close();
    const second = await TestClient.connect(daemon);
    await second.call('session.resume', { session_id: 'q', after_seq: lastSeq });
    await second.until(() => second.requests.length === 1, 'the question again');
    expect(second.requests[0]!.id).to.equal(first.requests[0]!.id);
    expect(second.requests[0]!.params['question']).to.equal('still there?');
    second.rpc.respond(second.requests[0]!.id, { result: { answer: 'yes' } });
    await second.nextEvent('turn.end', 'q');
    expect(second.reply('q')).to.equal('before\nanswer: yes');
  });

  it('a resume from seq 0 after 3,000 events says partial, with the first seq it still holds', async () => {
    const daemon = await startDaemon(h);
    const client = await TestClient.connect(daemon);
    await client.call('session.create', { session_id: 'many' });
    await client.call('prompt.submit', { session_id: 'many', text: Array.from({ length: 3000 }, (_, i) => `w${i}`).join(' ') });
    await client.nextEvent('turn.end', 'many');
    const last = client.events.at(-1)!.seq;
    expect(last).to.equal(3003); // turn.started, 3,000 deltas, message.complete, turn.end
    const again = await TestClient.connect(daemon);
    const resumed = await again.call<{ replay: string; first_seq: number; last_seq: number }>('session.resume', { session_id: 'many', after_seq: 0 });
    expect(resumed).to.include({ replay: 'partial', first_seq: last - 1999, last_seq: last });
    await again.until(() => again.events.length === 2000, 'the 2,000 kept events');
    expect(again.events[0]!.seq).to.equal(last - 1999);
    expect(again.events.at(-1)!.type).to.equal('turn.end');
  });
});
