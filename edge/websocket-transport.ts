// A WebSocket of the edge as a client door (PROTOCOL.md §5.2): one JSON-RPC message per text
// frame, both ways. What it leaves unread is its `bufferedAmount` and the frames held for the
// current event-loop turn, held to the same bound as a socket client's.
import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import type { ClientLines, OpenTransport } from '../actors/daemon/client-connection.js';
import { UnreadBound, type Overrun, type UnreadLimits } from '../actors/daemon/unread-bound.js';
import { textFrames } from './websocket-frames.js';

/** The close code of a daemon that stops: "going away". */
const GOING_AWAY = 1001;

export function websocketTransport(ws: WebSocket, socket: Duplex, limits: UnreadLimits): OpenTransport {
  return (onOverrun) => ({
    kind: 'websocket',
    output: new WebSocketLines(ws, socket, limits, onOverrun),
    listen(handlers) {
      ws.on('message', (data, isBinary) => handlers.messages([isBinary ? '' : data.toString()]));
      ws.on('error', () => ws.terminate());
      ws.once('close', handlers.closed);
    },
  });
}

/**
 * The frames of one event-loop turn leave as one write of the connection, as a socket client's
 * lines do: a frame per write made each streamed fragment a write of its own. They are framed here
 * (websocket-frames.ts) and written to the connection's socket, behind anything `ws` wrote before:
 * `ws` writes its own frames (a close, a pong) at once, and its `bufferedAmount` counts what the
 * socket still holds, ours included.
 */
class WebSocketLines implements ClientLines {
  private readonly bound: UnreadBound;
  private held: string[] = [];
  private heldBytes = 0;
  private flushScheduled = false;

  constructor(
    private readonly ws: WebSocket,
    private readonly socket: Duplex,
    limits: UnreadLimits,
    private readonly onOverrun: (overrun: Overrun, unreadBytes: number) => void,
  ) {
    this.bound = new UnreadBound({ get writableLength() { return ws.bufferedAmount; } }, limits);
  }

  write(line: string | Buffer): void {
    if (this.ws.readyState !== this.ws.OPEN) return;
    const overrun = this.bound.overrun(this.heldBytes);
    if (overrun !== null) {
      this.onOverrun(overrun, this.bound.unread + this.heldBytes);
      this.held = [];
      this.ws.terminate();
      return;
    }
    // A line ends in its newline; a frame is the message alone.
    const text = typeof line === 'string' ? line : line.toString('utf8');
    this.held.push(text.endsWith('\n') ? text.slice(0, -1) : text);
    this.heldBytes += text.length;
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
  }

  end(): void {
    this.flush();
    this.ws.close(GOING_AWAY, 'the daemon is stopping');
  }

  destroy(): void {
    this.ws.terminate();
  }

  private flush(): void {
    this.flushScheduled = false;
    const frames = this.held;
    this.held = [];
    this.heldBytes = 0;
    if (frames.length === 0 || this.ws.readyState !== this.ws.OPEN) return;
    this.socket.write(textFrames(frames));
    this.bound.wrote();
  }
}
