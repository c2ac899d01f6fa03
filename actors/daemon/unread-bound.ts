// How much output a connection may leave unread. A client that stops reading (a terminal
// suspended with Ctrl-Z) must not make the daemon buffer a night of events, and loses nothing by
// being cut off: reconnecting, `session.resume` with `after_seq` replays what it missed. A client
// that reads, only more slowly than a burst arrives, must not be cut for it: a queue of 1,000
// prompts sends ~50 MB of `session.queue` events within a second (each carries the whole queue).
// A socket's writableLength falls only when a whole write completes, and a burst's write is many
// MiB (a flush of one loop turn's lines): a client reading all along then looked stalled, and the
// queue bench's reader was cut in most runs. Progress is read from libuv's own count of the bytes
// still queued (the handle's writeQueueSize, which falls with every partial write, as Node's own
// socket timeout reads it), where the outlet has one; else from writableLength. Measured, a client
// that never reads overshoots 8 MiB by under 0.5 MiB (slow-consumer test).
// A stall is also counted in writes, not only in time: the socket drains only between event-loop
// turns, so a daemon busy for longer than STALL_MS in one turn (a burst of a thousand queue events
// built at once, on a loaded machine) would see no progress from a client that was reading all
// along, and cut it. A client is stalled once it has taken nothing for STALL_MS across
// STALLED_WRITES writes, each made on its own loop turn, with the socket free to drain between.

const MIB = 1024 * 1024;
/** The default bound, in MiB: `--max-unread-mib`. */
export const DEFAULT_MAX_UNREAD_MIB = 8;
/** A client that keeps reading may lag this many times the bound before it is cut anyway. */
const READING_FACTOR = 8;
/** A connection that has taken nothing of its output for this long is not reading… */
export const STALL_MS = 200;
/** …and over this many writes (one a loop turn at most), with the chance to drain between them. */
export const STALLED_WRITES = 3;

export interface UnreadLimits {
  /** Unread output past which a connection that has taken none of its output for STALL_MS is ended. */
  stalledBytes: number;
  /** Unread output past which any connection is ended, however it reads: the daemon's memory per client. */
  readingBytes: number;
}

export function unreadLimits(maxUnreadMib = DEFAULT_MAX_UNREAD_MIB): UnreadLimits {
  return { stalledBytes: maxUnreadMib * MIB, readingBytes: READING_FACTOR * maxUnreadMib * MIB };
}

export type Overrun = { why: 'is not reading its output' | 'reads its output too slowly'; maxUnreadBytes: number };

/** What the bound watches: a socket's unsent bytes, or a WebSocket's (its `bufferedAmount`). */
export interface Outlet {
  readonly writableLength: number;
  /** A net.Socket's libuv handle: the bytes its queued writes still hold, less each partial write. */
  readonly _handle?: { readonly writeQueueSize?: number } | null;
}

export class UnreadBound {
  /** The socket's unread bytes just after the last write: fewer later means the client took some. */
  private unreadAfterWrite = 0;
  /** libuv's queued bytes just after the last write, where the socket has a handle. */
  private queuedAfterWrite = 0;
  private lastProgressMs: number;
  private writesSinceProgress = 0;

  private readonly notReading: Overrun;
  private readonly tooSlow: Overrun;

  constructor(
    private readonly socket: Outlet,
    private readonly limits: UnreadLimits = unreadLimits(),
    private readonly nowMs: () => number = () => performance.now(),
  ) {
    this.lastProgressMs = nowMs();
    this.notReading = { why: 'is not reading its output', maxUnreadBytes: limits.stalledBytes };
    this.tooSlow = { why: 'reads its output too slowly', maxUnreadBytes: limits.readingBytes };
  }

  /**
   * Asked before each write: why the connection must end now, or null. `held` is output the
   * caller has not yet handed to the socket (it counts against the bounds, not as a stall).
   */
  overrun(held = 0): Overrun | null {
    const handed = this.socket.writableLength;
    // Nothing owed counts as progress: an idle client that a burst then reaches is not stalled.
    if (handed === 0 || handed < this.unreadAfterWrite || this.queued() < this.queuedAfterWrite) {
      this.lastProgressMs = this.nowMs();
      this.writesSinceProgress = 0;
    }
    const unread = handed + held;
    if (unread > this.limits.readingBytes) return this.tooSlow;
    const stalled = this.nowMs() - this.lastProgressMs > STALL_MS && this.writesSinceProgress >= STALLED_WRITES;
    if (unread > this.limits.stalledBytes && stalled) return this.notReading;
    return null;
  }

  /** Told after each write (the caller writes at most once an event-loop turn). */
  wrote(): void {
    this.unreadAfterWrite = this.socket.writableLength;
    this.queuedAfterWrite = this.queued();
    this.writesSinceProgress++;
  }

  /** libuv's bytes still queued; without a handle (a WebSocket), never a sign of progress. */
  private queued(): number {
    return this.socket._handle?.writeQueueSize ?? Number.POSITIVE_INFINITY;
  }

  get unread(): number {
    return this.socket.writableLength;
  }
}
