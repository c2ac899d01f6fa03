import { expect } from 'chai';
import type { Socket } from 'node:net';
import { MAX_UNREAD_BYTES, MAX_UNREAD_BYTES_READING, STALL_MS, UnreadBound } from '../../actors/daemon/unread-bound.js';

const MIB = 1024 * 1024;

/** A socket's unread output as the bound sees it, and a clock the test moves. */
function setup(): { socket: { writableLength: number }; clock: { ms: number }; bound: UnreadBound } {
  const socket = { writableLength: 0 };
  const clock = { ms: 1000 };
  return { socket, clock, bound: new UnreadBound(socket as unknown as Socket, () => clock.ms) };
}

describe('a connection\'s unread output', () => {
  it('ends a connection over 8 MiB that has taken nothing for the stall time', () => {
    const { socket, clock, bound } = setup();
    socket.writableLength = MAX_UNREAD_BYTES + 1;
    expect(bound.overrun()).to.equal(null); // it just got there
    bound.wrote();
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
});
