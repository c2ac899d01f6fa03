// What the daemon writes to one client connection (or REPL connection, or event stream). The lines of one event-loop turn leave as
// one write: a streaming turn sends ~200,000 events a second, and a write per line made a
// request object per line for the socket to hold, and, when a client that stopped reading was
// cut off, an error object per line still queued (~60,000 of them at the 8 MiB bound). Text
// lines are joined into one string; a byte line (a queue event, built as bytes) is its own
// write, inside a cork, so it is not copied again. The unread bound (unread-bound.ts) counts the
// lines held for the turn as well as what the socket holds.
import { UnreadBound, type Overrun, type UnreadLimits } from './unread-bound.js';

/** Where the lines go: a socket, or an HTTP response (an event stream). */
export interface LineOutlet {
  readonly writableLength: number;
  readonly destroyed: boolean;
  cork(): void;
  uncork(): void;
  write(data: string | Buffer): unknown;
  end(): unknown;
  destroy(): unknown;
}

export class ClientOutput {
  private held: (string | Buffer)[] = [];
  private heldBytes = 0;
  private flushScheduled = false;
  private readonly bound: UnreadBound;

  constructor(
    private readonly socket: LineOutlet,
    limits: UnreadLimits,
    private readonly onOverrun: (overrun: Overrun, unreadBytes: number) => void,
  ) {
    this.bound = new UnreadBound(socket, limits);
  }

  write(line: string | Buffer): void {
    if (this.socket.destroyed) return;
    const overrun = this.bound.overrun(this.heldBytes);
    if (overrun !== null) {
      this.onOverrun(overrun, this.bound.unread + this.heldBytes);
      this.held = [];
      this.heldBytes = 0;
      this.socket.destroy();
      return;
    }
    this.held.push(line);
    // Text counts in UTF-16 units rather than bytes: exact for the ASCII of JSON, close enough for a bound.
    this.heldBytes += line.length;
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
  }

  /** Writes the lines held for this turn, then ends the connection once they have left. */
  end(): void {
    this.flush();
    this.socket.end();
  }

  destroy(): void {
    this.socket.destroy();
  }

  private flush(): void {
    this.flushScheduled = false;
    const lines = this.held;
    if (lines.length === 0 || this.socket.destroyed) return;
    this.held = [];
    this.heldBytes = 0;
    this.socket.cork();
    let text: string[] = [];
    for (const line of lines) {
      if (typeof line === 'string') {
        text.push(line);
        continue;
      }
      if (text.length > 0) this.socket.write(text.join(''));
      text = [];
      this.socket.write(line);
    }
    if (text.length > 0) this.socket.write(text.join(''));
    this.socket.uncork();
    this.bound.wrote();
  }
}
