import { expect } from 'chai';
import { SseReader, type SseItem } from '../../agents/model/sse-reader.js';
import { seededRandom } from '../helpers/random.js';

const STREAM = [
  ': ping\r\n\r\n',
  'data: {"a":1}\r\n\r\n',
  'event: error\ndata: {"message":"x"}\n\n',
  'data: \n\n',
  'data: first\rdata: second\r\r',
  'error: {"message":"old style"}\n\n',
  '{"error":{"message":"bare"}}\n',
  'id: 7\nretry: 10\ndata: héllo wörld ✓\n\n',
  'data: [DONE]',
].join('');

const EXPECTED: SseItem[] = [
  { kind: 'event', event: 'message', data: '{"a":1}' },
  { kind: 'event', event: 'error', data: '{"message":"x"}' },
  { kind: 'event', event: 'message', data: 'first\nsecond' },
  { kind: 'field', name: 'error', value: '{"message":"old style"}' },
  { kind: 'bare', line: '{"error":{"message":"bare"}}' },
  { kind: 'event', event: 'message', data: 'héllo wörld ✓' },
  { kind: 'event', event: 'message', data: '[DONE]' },
];

function readInPieces(bytes: Buffer, cuts: number[]): SseItem[] {
  const reader = new SseReader();
  const items: SseItem[] = [];
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    items.push(...reader.push(bytes.subarray(from, cut)));
    from = cut;
  }
  return [...items, ...reader.end()];
}

describe('the model stream reader (SSE as servers write it)', () => {
  it('reads LF, CRLF and CR line ends, comments, empty data, unknown fields and bare JSON lines', () => {
    expect(readInPieces(Buffer.from(STREAM), [])).to.deep.equal(EXPECTED);
  });

  it('gives the same items however the bytes are split (a CRLF or a UTF-8 character across chunks)', () => {
    const bytes = Buffer.from(STREAM);
    for (let at = 1; at < bytes.length; at++) expect(readInPieces(bytes, [at]), `split at ${at}`).to.deep.equal(EXPECTED);
    const random = seededRandom(20);
    for (let round = 0; round < 200; round++) {
      const cuts = Array.from({ length: 8 }, () => Math.floor(random() * bytes.length)).sort((a, b) => a - b);
      expect(readInPieces(bytes, cuts), `cuts ${cuts.join(',')}`).to.deep.equal(EXPECTED);
    }
  });
});
