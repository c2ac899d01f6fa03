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
  /**
   * Records 6,000 lines of seeded sizes in one session and checks a replay every 97 of them: the
   * newest lines, byte for byte, in order, with firstSeq where they start. `exact`: lines small
   * enough that the buffer never reaches the session's bound, where the ring keeps exactly what
   * the bounds allow; otherwise a full buffer may drop a few more of its oldest to make a line's
   * room in one piece, so a replay is the newest part of what the bounds allow.
   */
  function replayCheck(seed: number, lineChars: (random: () => number) => number, exact: boolean): void {
    const random = seededRandom(seed);
    const rings = new EventRings();
    const model = new Model();
    for (let seq = 1; seq <= 6000; seq++) {
      const size = lineChars(random);
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
      const allowed = model.lines.filter((l) => l.seq > afterSeq || afterSeq > seq).map((l) => l.text);
      const got = replay.lines.map(text);
      const where = `seed ${seed}, seq ${seq}, after ${afterSeq}`;
      expect(replay.lastSeq).to.equal(seq);
      if (exact) expect(got, where).to.deep.equal(allowed);
      else {
        expect(got, where).to.deep.equal(allowed.slice(allowed.length - got.length));
        expect(got.length, where).to.be.at.least(Math.floor(allowed.length / 2));
      }
      const oldestKept = seq - rings.since('s', 0).lines.length + 1;
      const complete = afterSeq <= seq && afterSeq + 1 >= oldestKept;
      expect(replay.firstSeq, where).to.equal(complete ? undefined : Math.max(afterSeq > seq ? 0 : afterSeq + 1, oldestKept));
    }
  }

  it('replay exactly what the bounds keep, through growth, wrap-around, compaction and huge lines (seeded)', () => {
    // Mostly short lines, some of a few KB, a few huge ones (kept as they are, outside the buffer).
    replayCheck(20261201, (random) => {
      const roll = random();
      return roll < 0.002 ? 3 * 1024 * 1024 : roll < 0.2 ? Math.floor(random() * 3_000) : Math.floor(random() * 300);
    }, true);
  });

  it('replay the newest lines whole once a session fills its 8 MiB (seeded)', () => {
    // Lines of 20 to 60 KB, all in the buffer: ~200 of them fill the session's 8 MiB.
    replayCheck(20261202, (random) => 10_000 + Math.floor(random() * 20_000), false);
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
