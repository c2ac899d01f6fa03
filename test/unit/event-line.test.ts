import { expect } from 'chai';
import { eventLine } from '../../protocol/event-line.js';
import { FrameWriter } from '../../protocol/frame-writer.js';
import { rpcEvent } from '../../protocol/rpc.js';
import type { HostOutFrame } from '../../protocol/outbound.js';

/** The lines a FrameWriter writes for these frames. */
function written(...frames: HostOutFrame[]): string[] {
  let text = '';
  const writer = new FrameWriter({ write: (t) => (text += t) }, () => 123456789012345678901n);
  for (const frame of frames) writer.write(frame);
  writer.flush();
  return text.split('\n').filter((l) => l !== '');
}

describe('eventLine: the daemon cuts an event out of a host line without parsing it', () => {
  it('gives the sid and the params exactly as JSON.parse would', () => {
    const message = rpcEvent('s-1', 'message.delta', { text: 'a "quoted" }, brace\n and ünïcode' });
    const [line] = written({ type: 'rpc', sid: 's-1', message });
    const cut = eventLine(line!);
    expect(cut).to.not.equal(null);
    expect(cut!.sid).to.equal('s-1');
    expect(JSON.parse(cut!.paramsJson)).to.deep.equal((JSON.parse(line!) as { message: { params: unknown } }).message.params);
  });

  it('leaves to the full parse what it cannot cut safely: an escaped sid, a request.cancel, other frames, server requests', () => {
    const lines = written(
      { type: 'rpc', sid: 'a"b', message: rpcEvent('a"b', 'message.delta', { text: 'x' }) },
      { type: 'rpc', sid: 's', message: rpcEvent('s', 'request.cancel', { id: 'srq-1', method: 'clarify.request', reason: 'timeout' }) },
      { type: 'rpc', sid: 's', message: { jsonrpc: '2.0', id: 'srq-1', method: 'clarify.request', params: { session_id: 's' } } },
      { type: 'turn.error', sid: 's', request_id: 'r', message: 'x', reason: 'busy' },
    );
    expect(lines.map(eventLine)).to.deep.equal([null, null, null, null]);
  });
});
