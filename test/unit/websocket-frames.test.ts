import { expect } from 'chai';
import type { Writable } from 'node:stream';
import * as ws from 'ws';
import { textFrames } from '../../edge/websocket-frames.js';

/** `ws`'s frame parser, which it exports but its types do not declare. */
type FrameReceiver = Writable & { on(event: 'message', listener: (data: Buffer, isBinary: boolean) => void): FrameReceiver };
const { Receiver } = ws as unknown as { Receiver: new (options: { isServer: boolean }) => FrameReceiver };

/** The messages a WebSocket client reads out of `bytes`, parsed by `ws`'s own receiver (client side: frames unmasked). */
function readAsClient(bytes: Buffer, chunkBytes = bytes.length): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const receiver = new Receiver({ isServer: false });
    const messages: string[] = [];
    receiver.on('message', (data: Buffer, isBinary: boolean) => messages.push(isBinary ? `binary:${data.length}` : data.toString('utf8')));
    receiver.on('error', reject);
    for (let at = 0; at < bytes.length; at += chunkBytes) receiver.write(bytes.subarray(at, at + chunkBytes));
    receiver.end(() => resolve(messages));
  });
}

describe('websocket frames', () => {
  it('frames each message as one text frame, in order, across the three length forms', async () => {
    // 125 and 126 bytes straddle the 7-bit length; 65,535 and 65,536 the 16-bit one.
    const messages = ['', 'a', 'x'.repeat(125), 'y'.repeat(126), 'z'.repeat(65_535), 'w'.repeat(65_536), '{"jsonrpc":"2.0","id":1,"result":{}}'];
    expect(await readAsClient(textFrames(messages))).to.deep.equal(messages);
  });

  it('counts a message in bytes, not characters', async () => {
    // Two- to four-byte characters: 105 UTF-16 units but 252 bytes, past the 7-bit length only in bytes.
    const messages = ['é', '€'.repeat(42) + '😀'.repeat(21) + 'é'.repeat(21), 'ok'];
    const bytes = textFrames(messages);
    expect(bytes.length).to.equal(2 + 2 + 4 + Buffer.byteLength(messages[1]!) + 2 + 2);
    expect(await readAsClient(bytes)).to.deep.equal(messages);
  });

  it('reads the same however the bytes are cut on the way', async () => {
    const messages = Array.from({ length: 50 }, (_, i) => `{"jsonrpc":"2.0","method":"event","params":{"seq":${i},"text":"${'t'.repeat(i * 7)}"}}`);
    expect(await readAsClient(textFrames(messages), 7)).to.deep.equal(messages);
  });

  it('frames nothing as nothing', () => {
    expect(textFrames([]).length).to.equal(0);
  });
});
