// The only writer of host frames. Frames written in one event-loop turn leave together in one
// write (never split, never interleaved); `host_ns` is stamped when the frame is written.
import { writevSync } from 'node:fs';
import { stringifyWithNanos } from './nanos.js';
import type { HostOutFrame } from './outbound.js';

export interface ByteSink {
  /** Writes the buffers, in order, as one stream of bytes. */
  write(parts: Buffer[]): void;
}

/** A batch past this size is written at once instead of waiting for the end of the turn. */
const BATCH_LIMIT_BYTES = 256 * 1024;

export class FrameWriter {
  /** Frames as text, or as bytes where a frame was built around bytes kept between frames. */
  private batch: (string | Buffer)[] = [];
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
    this.add(this.stamped(body));
  }

  /** A frame made of `head`, `body` (JSON bytes the caller keeps unchanged until `flush`) and `tail`, which ends the object. */
  writeAround(head: string, body: Buffer, tail: string): void {
    this.add(head, body, this.stamped(tail));
  }

  private stamped(end: string): string {
    return `${end.slice(0, -1)},"host_ns":${this.hostNs()}}\n`;
  }

  private add(...parts: (string | Buffer)[]): void {
    for (const part of parts) {
      this.batch.push(part);
      this.batchBytes += part.length;
    }
    if (this.batchBytes >= BATCH_LIMIT_BYTES) this.flush();
    else if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flushSoon);
    }
  }

  /** Writes everything pending now; exit paths call this before the process ends. */
  flush(): void {
    if (this.batch.length === 0) return;
    const parts = encodeText(this.batch);
    this.batch = [];
    this.batchBytes = 0;
    this.sink.write(parts);
  }
}

/** The parts as buffers, each run of text encoded as one (most batches are text only); bytes are not copied. */
function encodeText(parts: readonly (string | Buffer)[]): Buffer[] {
  const buffers: Buffer[] = [];
  let text: string[] = [];
  for (const part of parts) {
    if (typeof part === 'string') {
      text.push(part);
      continue;
    }
    if (text.length > 0) buffers.push(Buffer.from(text.join(''), 'utf8'));
    text = [];
    buffers.push(part);
  }
  if (text.length > 0) buffers.push(Buffer.from(text.join(''), 'utf8'));
  return buffers;
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
    write(parts: Buffer[]): void {
      if (closed) return;
      let pending = parts;
      while (pending.length > 0) {
        try {
          pending = unwritten(pending, writevSync(fd, pending));
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

/** What is left of `parts` after the first `written` bytes went out (a write may be cut short). */
function unwritten(parts: Buffer[], written: number): Buffer[] {
  let left = written;
  let first = 0;
  while (first < parts.length && left >= parts[first]!.length) left -= parts[first++]!.length;
  if (first === parts.length) return [];
  return [parts[first]!.subarray(left), ...parts.slice(first + 1)];
}
