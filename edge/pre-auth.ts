// What a connection may cost before it has proved anything (PROTOCOL.md §5.1), as nginx and
// PostgreSQL bound their unauthenticated clients: WebSocket upgrades waiting for a first-frame
// `auth` (or a node's handshake) count against `--max-clients`, at most 64 wait at once, and a
// frame before `auth` holds at most 4 KiB, refused by the WebSocket parser as it reads the frame's
// header, so that an unfinished 7 MiB frame is never buffered.
import type { WebSocket } from 'ws';

/** Upgrades that may wait for their first frame at once; the next is refused 503. */
export const MAX_WAITING_FOR_AUTH = 64;
/** The largest frame a connection may send before it is authenticated. */
export const MAX_PRE_AUTH_FRAME_BYTES = 4096;

/**
 * The largest frame this connection may send from now on. `ws` fixes it per server, on the
 * receiver it makes for each connection (ws 8.23, pinned in package.json); the edge lowers it for
 * the time before `auth` and raises it after. test/integration/edge-bounds.test.ts fails if a
 * version of `ws` no longer keeps it there.
 */
export function limitFrames(ws: WebSocket, bytes: number): void {
  const receiver = (ws as unknown as { _receiver?: { _maxPayload?: number } | null })._receiver;
  if (receiver !== null && receiver !== undefined && typeof receiver._maxPayload === 'number') receiver._maxPayload = bytes;
}
