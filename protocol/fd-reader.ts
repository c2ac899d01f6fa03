// Reads a file descriptor (the host's stdin) into one reusable buffer, so a flood of input leaves
// no garbage behind and the line reader's memory bound holds for the whole process.
// A pipe or socket is read through the event loop (net.Socket with a user buffer: no threadpool
// hop per read, which matters for turn latency); anything else (a file, a terminal) through
// fs.read on the threadpool.
import { fstatSync, read } from 'node:fs';
import { Socket, type SocketConstructorOpts } from 'node:net';

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
  const stat = fstatSync(fd);
  if (stat.isFIFO() || stat.isSocket()) readSocket(fd, buffer, events);
  else readWithFs(fd, buffer, events);
}

function readSocket(fd: number, buffer: Buffer, events: FdReaderEvents): void {
  let ended = false;
  const end = (error?: Error): void => {
    if (ended) return;
    ended = true;
    events.end(error);
  };
  // `onread` (a user buffer, no allocation per read) is accepted by the constructor since Node 12;
  // @types/node only declares it for connect().
  const options: SocketConstructorOpts & { onread: unknown } = {
    fd,
    readable: true,
    writable: false,
    onread: {
      buffer,
      callback: (bytesRead: number, bytes: Uint8Array) => {
        events.chunk(Buffer.from(bytes.buffer, bytes.byteOffset, bytesRead));
        return true;
      },
    },
  };
  const socket = new Socket(options);
  socket.on('end', () => end());
  socket.on('close', () => end());
  socket.on('error', (err) => end(err));
}

function readWithFs(fd: number, buffer: Buffer, events: FdReaderEvents): void {
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
