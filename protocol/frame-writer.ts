// The only writer of host frames. Frames written in one event-loop turn leave together in one
// write (never split, never interleaved); `host_ns` is stamped when the frame is written.
import { writeSync } from 'node:fs';
import { stringifyWithNanos } from './nanos.js';
import type { HostOutFrame } from './outbound.js';

export interface ByteSink {
  write(text: string): void;
}

/** A batch past this size is written at once instead of waiting for the end of the turn. */
const BATCH_LIMIT_BYTES = 256 * 1024;

export class FrameWriter {
  private batch: string[] = [];
  private batchBytes = 0;
  private flushScheduled = false;
  private readonly flushSoon = (): void => {
    this.flushScheduled = false;
    this.flush();
  };

  constructor(
    private readonly sink: ByteSink,
    private readonly hostNs: () => bigint,
  ) {}

  write(frame: HostOutFrame): void {
    this.writeJson(stringifyWithNanos(frame));
  }

  /** A frame already serialized (a frame built from cached parts); `body` is one JSON object. */
  writeJson(body: string): void {
    const line = `${body.slice(0, -1)},"host_ns":${this.hostNs()}}\n`;
    this.batch.push(line);
    this.batchBytes += line.length;
    if (this.batchBytes >= BATCH_LIMIT_BYTES) this.flush();
    else if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flushSoon);
    }
  }

  /** Writes everything pending now; exit paths call this before the process ends. */
  flush(): void {
    if (this.batch.length === 0) return;
    const text = this.batch.length === 1 ? this.batch[0]! : this.batch.join('');
    this.batch = [];
    this.batchBytes = 0;
    this.sink.write(text);
  }
}

const pause = new Int32Array(new SharedArrayBuffer(4));

/**
 * Blocking writes to a file descriptor. Blocking on purpose: a frame is only "written" once
 * the kernel has it, which is what the durability rules promise the parent. A closed reader
 * (EPIPE) silences the sink; stdin's end or the parent guard then starts the shutdown.
 */
export function fdSink(fd: number): ByteSink {
  let closed = false;
  return {
    write(text: string): void {
      if (closed) return;
      let bytes = Buffer.from(text, 'utf8');
      while (bytes.length > 0) {
        try {
          const written = writeSync(fd, bytes);
          bytes = bytes.subarray(written);
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code;
          if (code === 'EAGAIN') {
            Atomics.wait(pause, 0, 0, 1); // a non-blocking descriptor whose pipe is full
            continue;
          }
          if (code === 'EPIPE' || code === 'EBADF') {
            closed = true;
            return;
          }
          throw err;
        }
      }
    },
  };
}
