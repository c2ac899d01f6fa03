import { expect } from 'chai';
import { parseFrame } from '../../protocol/frames.js';
import { FrameWriter } from '../../protocol/frame-writer.js';
import { Nanos } from '../../protocol/nanos.js';

const reply = (line: string) => {
  const parsed = parseFrame(line);
  if (parsed.ok) throw new Error(`expected a refusal for ${line}`);
  return parsed.reply;
};

describe('frames', () => {
  it('parses on_busy, client_message_id, keep_queue and the queue frame; names the bad field', () => {
    const start = parseFrame(JSON.stringify({ type: 'turn.start', sid: 's', request_id: 'r', text: 't', on_busy: 'steer', client_message_id: 'm-1' }));
    expect(start).to.deep.include({ ok: true });
    expect((start as { frame: object }).frame).to.include({ on_busy: 'steer', client_message_id: 'm-1' });
    expect(reply(JSON.stringify({ type: 'turn.start', sid: 's', request_id: 'r', text: 't', on_busy: 'later' }))).to.include({
      type: 'turn.error',
      reason: 'invalid',
      message: 'on_busy must be one of queue, reject, interrupt, steer',
    });
    expect((parseFrame(JSON.stringify({ type: 'interrupt', sid: 's', request_id: 'r', keep_queue: true })) as { frame: object }).frame).to.include({ keep_queue: true });
    expect((parseFrame(JSON.stringify({ type: 'queue', sid: 's', request_id: 'r', op: 'edit', queue_id: 'q-1', text: 'new' })) as { frame: object }).frame).to.deep.equal({
      type: 'queue',
      sid: 's',
      request_id: 'r',
      op: 'edit',
      queue_id: 'q-1',
      text: 'new',
    });
    expect(reply(JSON.stringify({ type: 'queue', sid: 's', request_id: 'r', op: 'delete' }))).to.deep.equal({
      type: 'queue.error',
      sid: 's',
      request_id: 'r',
      message: 'queue_id required',
      code: -32602,
    });
    expect(reply(JSON.stringify({ type: 'queue', sid: 's', request_id: 'r', op: 'edit', queue_id: 'q-1' }))).to.include({ message: 'text must be a string' });
  });

  it('parses a full turn.start, taking `prompt` when `text` is absent', () => {
    const parsed = parseFrame(
      JSON.stringify({
        type: 'turn.start',
        sid: 's1',
        request_id: 'r1',
        prompt: 'hi',
        session_key: 'k',
        history: [{ role: 'user', content: 'earlier' }],
        queued_prompt_generation: 2,
        cwd: '/tmp',
        extra: 'ignored',
      }),
    );
    expect(parsed).to.deep.equal({
      ok: true,
      frame: {
        type: 'turn.start',
        sid: 's1',
        request_id: 'r1',
        text: 'hi',
        session_key: 'k',
        history: [{ role: 'user', content: 'earlier' }],
        queued_prompt_generation: 2,
        cwd: '/tmp',
      },
    });
  });

  it('refuses what is not a JSON object', () => {
    expect(reply('{oops')).to.deep.include({ type: 'error', request_id: null });
    expect((reply('{oops') as { message: string }).message).to.match(/^invalid json: /);
    expect(reply('[1,2]')).to.deep.equal({ type: 'error', request_id: null, message: 'frame must be an object' });
    expect(reply('"text"')).to.deep.equal({ type: 'error', request_id: null, message: 'frame must be an object' });
  });

  it('names an unknown type exactly, echoing the request id', () => {
    expect(reply('{"type":"bogus","request_id":"b"}')).to.deep.equal({ type: 'error', request_id: 'b', message: 'unknown frame type: bogus' });
    expect(reply('{"type":"toString","request_id":"b"}')).to.deep.equal({ type: 'error', request_id: 'b', message: 'unknown frame type: toString' });
  });

  it("answers a bad field with the frame type's own error frame, naming the field", () => {
    expect(reply('{"type":"turn.start","request_id":"r","text":"x"}')).to.deep.equal({
      type: 'turn.error',
      sid: null,
      request_id: 'r',
      message: 'sid required',
      reason: 'invalid',
    });
    expect(reply('{"type":"turn.start","sid":7,"request_id":"r"}')).to.include({ type: 'turn.error', message: 'sid must be a string' });
    expect(reply('{"type":"turn.start","sid":"s","request_id":"r","history":[{"role":"user","content":3}]}')).to.include({
      message: 'history[0].content must be a string',
    });
    expect(reply('{"type":"turn.start","sid":"s","request_id":"r","queued_prompt_generation":"1"}')).to.include({
      message: 'queued_prompt_generation must be an integer >= 0',
    });
    expect(reply('{"type":"respond","sid":"s","request_id":"r","params":[]}')).to.deep.equal({
      type: 'respond.error',
      sid: 's',
      request_id: 'r',
      message: 'response params must be an object',
    });
    expect(reply('{"type":"control","sid":"s","request_id":"r"}')).to.include({ type: 'control.error', message: 'route_name required' });
    expect(reply('{"type":"shutdown","request_id":"r","wait":-1}')).to.deep.equal({
      type: 'error',
      request_id: 'r',
      message: 'shutdown: wait must be a number >= 0',
    });
    expect(reply('{"type":"debug","request_id":"r","what":"everything"}')).to.include({
      message: 'debug: what must be one of sessions, requests, turns, actors, stats',
    });
  });

  it('reads respond params as a lock or as a client response', () => {
    const lock = parseFrame('{"type":"respond","sid":"s","request_id":"r","params":{"lock":{"request_id":"srq-1","question_id":"q0","answer":"a"}}}');
    expect(lock.ok && lock.frame).to.deep.include({ params: { kind: 'lock', requestId: 'srq-1', questionId: 'q0', answer: 'a' } });
    const framed = parseFrame('{"type":"respond","sid":"s","request_id":"r","params":{"frame":{"jsonrpc":"2.0","id":"srq-1","result":{"answer":"yes"}}}}');
    expect(framed.ok && framed.frame).to.deep.include({ params: { kind: 'response', id: 'srq-1', result: { answer: 'yes' } } });
    const bare = parseFrame('{"type":"respond","sid":"s","request_id":"r","params":{"id":"srq-2","error":{"code":1,"message":"no"}}}');
    expect(bare.ok && bare.frame).to.deep.include({ params: { kind: 'response', id: 'srq-2', error: { code: 1, message: 'no' } } });
  });

  it('writes each frame as one line with host_ns, and nanosecond stamps with all their digits', async () => {
    const written: string[] = [];
    const writer = new FrameWriter({ write: (parts) => written.push(Buffer.concat(parts).toString('utf8')) }, () => 12345678901234567890n);
    writer.write({ type: 'turn.started', sid: 's', request_id: 'r', turn_id: 't', started_ns: Nanos.of(98765432109876543210n) });
    writer.write({ type: 'error', request_id: null, message: 'x' });
    expect(written).to.deep.equal([]);
    await new Promise((r) => setImmediate(r));
    expect(written).to.have.length(1);
    expect(written[0]).to.equal(
      '{"type":"turn.started","sid":"s","request_id":"r","turn_id":"t","started_ns":98765432109876543210,"host_ns":12345678901234567890}\n' +
        '{"type":"error","request_id":null,"message":"x","host_ns":12345678901234567890}\n',
    );
  });
});
