// A WebSocket of the edge as a client door (PROTOCOL.md §5.2): one JSON-RPC message per text
// frame, both ways. What it leaves unread is its `bufferedAmount`, held to the same bound as a
// socket client's.
import type { WebSocket } from 'ws';
import type { ClientLines, OpenTransport } from '../actors/daemon/client-connection.js';
import { UnreadBound, type Overrun, type UnreadLimits } from '../actors/daemon/unread-bound.js';

/** The close code of a daemon that stops: "going away". */
const GOING_AWAY = 1001;

export function websocketTransport(ws: WebSocket, limits: UnreadLimits): OpenTransport {
  return (onOverrun) => ({
    kind: 'websocket',
    output: new WebSocketLines(ws, limits, onOverrun),
    listen(handlers) {
      ws.on('message', (data, isBinary) => handlers.message(isBinary ? '' : data.toString()));
      ws.on('error', () => ws.terminate());
      ws.once('close', handlers.closed);
    },
  });
}

class WebSocketLines implements ClientLines {
  private readonly bound: UnreadBound;

  constructor(
    private readonly ws: WebSocket,
    limits: UnreadLimits,
    private readonly onOverrun: (overrun: Overrun, unreadBytes: number) => void,
  ) {
    this.bound = new UnreadBound({ get writableLength() { return ws.bufferedAmount; } }, limits);
  }

  write(line: string | Buffer): void {
    if (this.ws.readyState !== this.ws.OPEN) return;
    const overrun = this.bound.overrun();
    if (overrun !== null) {
      this.onOverrun(overrun, this.bound.unread);
      this.ws.terminate();
      return;
    }
    // A line ends in its newline; a frame is the message alone.
    const text = typeof line === 'string' ? line : line.toString('utf8');
    this.ws.send(text.endsWith('\n') ? text.slice(0, -1) : text);
    this.bound.wrote();
  }

  end(): void {
    this.ws.close(GOING_AWAY, 'the daemon is stopping');
  }

  destroy(): void {
    this.ws.terminate();
  }
}
