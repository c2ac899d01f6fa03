// Reads a file descriptor (the host's stdin) into one reusable buffer. Unlike a stream, no
// buffer is allocated per chunk, so a flood of input leaves no garbage behind and the memory
// bound of the line reader holds for the whole process.
import { read } from 'node:fs';

const CHUNK_BYTES = 64 * 1024;
/** A non-blocking descriptor with nothing to read is polled at this period. */
const RETRY_MS = 5;

export interface FdReaderEvents {
  /** The chunk's memory is reused after this returns. */
  chunk(bytes: Buffer): void;
  end(error?: Error): void;
}

export function readFd(fd: number, events: FdReaderEvents): void {
  const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
  const next = (): void => {
    read(fd, buffer, 0, buffer.length, null, (err, bytesRead) => {
      if (err) {
        if (err.code === 'EAGAIN' || err.code === 'EINTR') {
          setTimeout(next, RETRY_MS);
          return;
        }
        events.end(err);
        return;
      }
      if (bytesRead === 0) {
        events.end();
        return;
      }
      events.chunk(buffer.subarray(0, bytesRead));
      next();
    });
  };
  next();
}
