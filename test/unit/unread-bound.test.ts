import { expect } from 'chai';
import type { Socket } from 'node:net';
import { STALL_MS, STALLED_WRITES, UnreadBound, unreadLimits, type UnreadLimits } from '../../actors/daemon/unread-bound.js';

const MIB = 1024 * 1024;
const { stalledBytes: MAX_UNREAD_BYTES, readingBytes: MAX_UNREAD_BYTES_READING } = unreadLimits();

/** A socket's unread output as the bound sees it, and a clock the test moves. */
function setup(limits?: UnreadLimits): { socket: { writableLength: number }; clock: { ms: number }; bound: UnreadBound } {
  const socket = { writableLength: 0 };
  const clock = { ms: 1000 };
  return { socket, clock, bound: new UnreadBound(socket as unknown as Socket, limits, () => clock.ms) };
}

/** Writes on successive loop turns that the client takes nothing of. */
function untakenWrites(bound: UnreadBound, count: number): void {
  for (let i = 0; i < count; i++) {
    expect(bound.overrun()).to.equal(null);
    bound.wrote();
  }
}

describe('a connection\'s unread output', () => {
  it('ends a connection over 8 MiB that has taken nothing for the stall time, over several writes', () => {
    const { socket, clock, bound } = setup();
    socket.writableLength = MAX_UNREAD_BYTES + 1;
    expect(bound.overrun()).to.equal(null); // it just got there
    untakenWrites(bound, STALLED_WRITES);
    clock.ms += STALL_MS + 1;
    expect(bound.overrun()?.why).to.equal('is not reading its output');
  });

  it('does not end a reading client while the daemon itself is busy past the stall time (no write between)', () => {
    const { socket, clock, bound } = setup();
    socket.writableLength = MAX_UNREAD_BYTES + 1;
    bound.wrote();
    clock.ms += 10 * STALL_MS; // one long event-loop turn: the socket could not drain
    expect(bound.overrun(MIB)).to.equal(null);
    expect(bound.overrun(2 * MIB)).to.equal(null);
    untakenWrites(bound, STALLED_WRITES - 1);
    expect(bound.overrun()?.why).to.equal('is not reading its output');
  });

  it('sees a client take part of one large write (libuv\'s queue falls while writableLength does not)', () => {
    const socket = { writableLength: 0, _handle: { writeQueueSize: 0 } };
    const clock = { ms: 1000 };
    const bound = new UnreadBound(socket as unknown as Socket, undefined, () => clock.ms);
    // One flush of a burst: a 30 MiB write the client reads steadily, 1 MiB between two looks.
    socket.writableLength = 30 * MIB;
    socket._handle.writeQueueSize = 30 * MIB;
    for (let i = 0; i < 10; i++) {
      expect(bound.overrun(), `look ${i}`).to.equal(null);
      bound.wrote();
      clock.ms += STALL_MS + 1;
      socket._handle.writeQueueSize -= MIB;
    }
    // The same socket once the client stops reading: cut as before.
    for (let i = 0; i < STALLED_WRITES + 1; i++) {
      bound.overrun();
      bound.wrote();
    }
    clock.ms += STALL_MS + 1;
    expect(bound.overrun()?.why).to.equal('is not reading its output');
  });

  it('lets a client that keeps taking its output lag a burst, up to the hard bound', () => {
    const { socket, clock, bound } = setup();
    socket.writableLength = 40 * MIB;
    expect(bound.overrun()).to.equal(null);
    bound.wrote();
    for (let i = 0; i < 10; i++) {
      clock.ms += STALL_MS; // slower than the burst, but never stalled for a whole STALL_MS
      socket.writableLength -= MIB;
      expect(bound.overrun()).to.equal(null);
      socket.writableLength += 2 * MIB;
      bound.wrote();
    }
    socket.writableLength = MAX_UNREAD_BYTES_READING + 1;
    expect(bound.overrun()?.why).to.equal('reads its output too slowly');
  });

  it('does not count an idle time with nothing owed as a stall', () => {
    const { socket, clock, bound } = setup();
    clock.ms += 3_600_000;
    expect(bound.overrun()).to.equal(null);
    socket.writableLength = 10 * MIB; // a burst in one event-loop turn
    expect(bound.overrun()).to.equal(null);
  });

  it('under 8 MiB never ends a connection, however long it has not read', () => {
    const { socket, clock, bound } = setup();
    socket.writableLength = MAX_UNREAD_BYTES;
    bound.wrote();
    clock.ms += 60_000;
    expect(bound.overrun()).to.equal(null);
  });

  it('holds the bound it is given (--max-unread-mib): 1 MiB when not reading, 8 MiB however it reads', () => {
    const { socket, clock, bound } = setup(unreadLimits(1));
    socket.writableLength = MIB + 1;
    untakenWrites(bound, STALLED_WRITES);
    clock.ms += STALL_MS + 1;
    expect(bound.overrun()).to.deep.equal({ why: 'is not reading its output', maxUnreadBytes: MIB });
    socket.writableLength = 8 * MIB;
    expect(bound.overrun(1)).to.deep.equal({ why: 'reads its output too slowly', maxUnreadBytes: 8 * MIB });
  });

  it('counts output held back for the turn against the bounds, not as a stall', () => {
    const { socket, clock, bound } = setup();
    socket.writableLength = 0;
    clock.ms += STALL_MS + 1;
    expect(bound.overrun(MAX_UNREAD_BYTES + 1)).to.equal(null); // owed nothing to the socket: not stalled
    expect(bound.overrun(MAX_UNREAD_BYTES_READING + 1)?.why).to.equal('reads its output too slowly');
  });
});
