import { expect } from 'chai';
import { LineReader } from '../../protocol/line-reader.js';
import { seededRandom } from '../helpers/random.js';

function collect(maxBytes?: number) {
  const lines: string[] = [];
  let oversized = 0;
  const reader = new LineReader({ line: (t) => lines.push(t), oversized: () => oversized++ }, maxBytes);
  return { reader, lines, oversized: () => oversized };
}

describe('line reader', () => {
  it('gives back every line whole however the bytes are chunked (seeded)', () => {
    const seed = 20261129;
    const random = seededRandom(seed);
    const payload = Array.from({ length: 200 }, (_, i) => JSON.stringify({ i, text: 'é✓'.repeat(i % 7), pad: 'x'.repeat(i * 13) }));
    const bytes = Buffer.from(payload.join('\n') + '\n', 'utf8');
    const { reader, lines } = collect();
    for (let at = 0; at < bytes.length; ) {
      const size = 1 + Math.floor(random() * 300);
      reader.push(bytes.subarray(at, at + size));
      at += size;
    }
    expect(lines, `seed ${seed}`).to.deep.equal(payload);
  });

  it('after a line long enough that its buffer is let go, reads the next lines whole', () => {
    const long = 'L'.repeat(200 * 1024);
    const bytes = Buffer.from(`${long}\nshort one\n${long}\nshort two\n`);
    const { reader, lines } = collect();
    for (let at = 0; at < bytes.length; at += 4096) reader.push(bytes.subarray(at, at + 4096));
    expect(lines).to.deep.equal([long, 'short one', long, 'short two']);
  });

  it('reports a line over the bound once and skips it to its newline', () => {
    const { reader, lines, oversized } = collect(16);
    reader.push(Buffer.from('{"a":1}\n' + 'y'.repeat(10)));
    reader.push(Buffer.from('z'.repeat(10)));
    expect(oversized()).to.equal(1);
    reader.push(Buffer.from('w'.repeat(100)));
    reader.push(Buffer.from('tail\n{"b":2}\n'));
    expect(oversized()).to.equal(1);
    expect(lines).to.deep.equal(['{"a":1}', '{"b":2}']);
  });

  it('accepts a line exactly at the bound', () => {
    const { reader, lines, oversized } = collect(8);
    reader.push(Buffer.from('12345678\n123456789\n'));
    expect(lines).to.deep.equal(['12345678']);
    expect(oversized()).to.equal(1);
  });

  it('skips blank lines and emits a last line without a newline at the end of the stream', () => {
    const { reader, lines } = collect();
    reader.push(Buffer.from('\n  \n{"a":1}\n{"b"'));
    reader.push(Buffer.from(':2}'));
    reader.end();
    expect(lines).to.deep.equal(['{"a":1}', '{"b":2}']);
  });
});
