// The daemon's fast path for the bulk of what a host writes: `rpc` frames carrying an event.
// Every such frame is written by the host's FrameWriter from `rpcEvent` (or `queueEventFrame`),
// with one key order: {"type":"rpc","sid":…,"message":{"jsonrpc":"2.0","method":"event","params":
// {"type":…,…}},"host_ns":…}. The daemon runs only a host of its own build (hello's build_sha),
// so it may cut the event's params out of the line instead of parsing the line and serializing
// the params again (the queue's events carry the whole queue: that was most of the daemon's CPU).
// Anything else, or anything unusual (an escaped sid, a cancel whose id the daemon needs), is
// parsed in full by the caller.

const PREFIX = '{"type":"rpc","sid":"';
const MESSAGE = '","message":{"jsonrpc":"2.0","method":"event","params":';
const HOST_NS = ',"host_ns":';
const CANCEL = '{"type":"request.cancel"';

export interface EventLine {
  sid: string;
  /** The event's params object, as JSON text. */
  paramsJson: string;
}

export function eventLine(text: string): EventLine | null {
  if (!text.startsWith(PREFIX)) return null;
  const sidEnd = text.indexOf(MESSAGE, PREFIX.length);
  if (sidEnd === -1) return null;
  const sid = text.slice(PREFIX.length, sidEnd);
  if (sid.includes('\\') || sid.includes('"')) return null;
  const paramsStart = sidEnd + MESSAGE.length;
  if (text.startsWith(CANCEL, paramsStart)) return null;
  const hostNs = text.lastIndexOf(HOST_NS);
  // The params object ends just before the message's closing brace.
  if (hostNs <= paramsStart || text[hostNs - 1] !== '}' || text[hostNs - 2] !== '}') return null;
  return { sid, paramsJson: text.slice(paramsStart, hostNs - 1) };
}
