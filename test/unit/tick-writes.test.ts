import { expect } from 'chai';
import { Writable } from 'node:stream';
import { MAX_HELD_BYTES, MAX_HELD_TURNS, tickWrites } from '../../protocol/tick-writes.js';

/** A stream that records each write it is handed (a writev of a corked batch is one). */
function recorder(): { stream: Writable; writes: string[] } {
  const writes: string[] = [];
  const stream = new Writable({
    writev(chunks, callback) {
      writes.push(chunks.map((c) => String(c.chunk)).join(''));
      callback();
    },
    write(chunk, _encoding, callback) {
      writes.push(String(chunk));
      callback();
    },
  });
  return { stream, writes };
}

const nextLoopTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

async function loopTurns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await nextLoopTurn();
}

describe('tick writes', () => {
  it('sends the lines of one loop turn in one write', async () => {
    const { stream, writes } = recorder();
    const write = tickWrites(stream);
    write('a\n');
    write('b\n');
    await loopTurns(2);
    write('c\n');
    await loopTurns(2);
    expect(writes).to.deep.equal(['a\nb\n', 'c\n']);
  });

  it('holds the batch while more is coming, and sends it all once nothing is', async () => {
    const { stream, writes } = recorder();
    let coming = true;
    const write = tickWrites(stream, () => coming);
    for (let i = 0; i < 5; i++) {
      write(`${i}\n`);
      await nextLoopTurn();
    }
    expect(writes).to.deep.equal([]);
    coming = false;
    await loopTurns(2);
    expect(writes).to.deep.equal(['0\n1\n2\n3\n4\n']);
  });

  it('sends a held batch after MAX_HELD_TURNS loop turns even while more keeps coming', async () => {
    const { stream, writes } = recorder();
    const write = tickWrites(stream, () => true);
    write('first\n');
    await loopTurns(MAX_HELD_TURNS - 2);
    expect(writes).to.deep.equal([]);
    await loopTurns(4);
    expect(writes).to.deep.equal(['first\n']);
  });

  it('sends a batch of MAX_HELD_BYTES at the next loop turn even while more keeps coming', async () => {
    const { stream, writes } = recorder();
    const write = tickWrites(stream, () => true);
    write('x'.repeat(MAX_HELD_BYTES));
    await loopTurns(2);
    expect(writes).to.have.length(1);
    expect(writes[0]).to.have.length(MAX_HELD_BYTES);
  });
});
