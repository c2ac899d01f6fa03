import { expect } from 'chai';
import { EVENTS_PER_SESSION, EventRings } from '../../actors/daemon/event-rings.js';
import { seededRandom } from '../helpers/random.js';

const BYTES_PER_SESSION = 8 * 1024 * 1024;

/** What a session's ring must hold: the newest lines within both bounds, as plain text. */
class Model {
  lines: { seq: number; text: string; bytes: number }[] = [];
  used = 0;
  record(seq: number, text: string): void {
    const bytes = Buffer.byteLength(text);
    if (this.lines.length === EVENTS_PER_SESSION) this.dropOldest();
    while (this.lines.length > 0 && this.used + bytes > BYTES_PER_SESSION) this.dropOldest();
    this.lines.push({ seq, text, bytes });
    this.used += bytes;
  }
  private dropOldest(): void {
    this.used -= this.lines.shift()!.bytes;
  }
}

const text = (line: string | Buffer) => (typeof line === 'string' ? line : line.toString('utf8'));

describe('event rings', () => {
  it('replay what the bounds keep, byte for byte, through growth, wrap-around and huge lines (seeded)', () => {
    const seed = 20261201;
    const random = seededRandom(seed);
    const rings = new EventRings();
    const model = new Model();
    for (let seq = 1; seq <= 6000; seq++) {
      const roll = random();
      const size = roll < 0.002 ? 3 * 1024 * 1024 : roll < 0.2 ? Math.floor(random() * 20_000) : Math.floor(random() * 300);
      const body = `${seq}:${'é✓x'.repeat(size / 3)}\n`;
      const asBytes = random() < 0.3;
      rings.record('s', (n) => {
        expect(n).to.equal(seq);
        return asBytes ? Buffer.from(body) : body;
      });
      model.record(seq, body);
      if (seq % 97 !== 0) continue;
      const afterSeq = Math.floor(random() * (seq + 5));
      const replay = rings.since('s', afterSeq);
      const expected = model.lines.filter((l) => l.seq > afterSeq || afterSeq > seq);
      expect(replay.lastSeq).to.equal(seq);
      expect(replay.lines.map(text), `seed ${seed}, seq ${seq}, after ${afterSeq}`).to.deep.equal(expected.map((l) => l.text));
      const complete = afterSeq <= seq && afterSeq + 1 >= model.lines[0]!.seq;
      expect(replay.firstSeq).to.equal(complete ? undefined : expected[0]?.seq ?? seq + 1);
    }
  });

  it('numbers each session on its own and replays nothing past the last event', () => {
    const rings = new EventRings();
    rings.record('a', (seq) => `a${seq}\n`);
    rings.record('b', (seq) => `b${seq}\n`);
    rings.record('a', (seq) => `a${seq}\n`);
    expect(rings.since('a', 0).lines.map(text)).to.deep.equal(['a1\n', 'a2\n']);
    expect(rings.since('a', 2)).to.deep.equal({ lastSeq: 2, lines: [] });
    expect(rings.since('b', 0).lines.map(text)).to.deep.equal(['b1\n']);
    expect(rings.since('c', 0)).to.deep.equal({ lastSeq: 0, lines: [] });
    expect(rings.since('c', 5)).to.deep.equal({ lastSeq: 0, lines: [], firstSeq: 1 });
  });
});
