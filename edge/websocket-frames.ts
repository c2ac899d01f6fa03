// A server's WebSocket text frames, built together for one write (RFC 6455 §5.2). `ws` frames
// and writes each message on its own (two writes a message, corked); a WebSocket client of the
// daemon is sent ~5 messages a turn and ~200,000 a second while a turn streams, and those writes
// were a tenth of the daemon's time behind the edge. A server's frames are never masked, and the
// edge's WebSocket server has no per-message compression, so a frame is a header and the text.

/** FIN set (the message is whole) and opcode 1 (text). */
const FIN_TEXT = 0x81;
/** Payload lengths up to this fit the header's 7-bit field; 126 and 127 say a 16- or 64-bit length follows. */
const SEVEN_BIT_MAX = 125;
const SIXTEEN_BIT_MAX = 0xffff;
const LENGTH_16 = 126;
const LENGTH_64 = 127;

function headerBytes(payloadBytes: number): number {
  if (payloadBytes <= SEVEN_BIT_MAX) return 2;
  return payloadBytes <= SIXTEEN_BIT_MAX ? 4 : 10;
}

/** Writes the frame header for `payloadBytes` at `at`; returns where the payload starts. */
function writeHeader(out: Buffer, at: number, payloadBytes: number): number {
  out[at] = FIN_TEXT;
  if (payloadBytes <= SEVEN_BIT_MAX) {
    out[at + 1] = payloadBytes;
    return at + 2;
  }
  if (payloadBytes <= SIXTEEN_BIT_MAX) {
    out[at + 1] = LENGTH_16;
    out.writeUInt16BE(payloadBytes, at + 2);
    return at + 4;
  }
  out[at + 1] = LENGTH_64;
  out.writeBigUInt64BE(BigInt(payloadBytes), at + 2);
  return at + 10;
}

/** Each message as one unmasked text frame, in order, in one buffer. */
export function textFrames(messages: readonly string[]): Buffer {
  const sizes = messages.map((message) => Buffer.byteLength(message));
  const total = sizes.reduce((sum, size) => sum + headerBytes(size) + size, 0);
  const out = Buffer.allocUnsafe(total);
  let at = 0;
  messages.forEach((message, i) => {
    at = writeHeader(out, at, sizes[i]!);
    at += out.write(message, at, 'utf8');
  });
  return out;
}
