// Log records: one JSON object per line, each appended with exactly one write() on a descriptor
// opened with O_APPEND (mode 0600). With O_APPEND the kernel moves to the end and writes as one
// step, so concurrent writers (threads or processes) never interleave inside a record. A short
// write is not retried: a retry would be a second write, and could land inside another record.
import { closeSync, constants, mkdirSync, openSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

const APPEND_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_APPEND;
const LOG_MODE = 0o600;

export type LogRecord = string | Record<string, unknown>;

function recordBytes(record: LogRecord): Buffer {
  const text = typeof record === 'string' ? record : JSON.stringify(record);
  return Buffer.from(text.endsWith('\n') ? text : `${text}\n`, 'utf8');
}

/** Appends one record to the file at path: open, one write, close. Returns the bytes written. */
export function appendLogRecord(path: string, record: LogRecord): number {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const fd = openSync(path, APPEND_FLAGS, LOG_MODE);
  try {
    return writeSync(fd, recordBytes(record));
  } finally {
    closeSync(fd);
  }
}

/** A log file kept open for a process's lifetime; the same one-write-per-record rule. */
export class LogFile {
  private readonly fd: number;
  private closed = false;

  constructor(readonly path: string) {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    this.fd = openSync(path, APPEND_FLAGS, LOG_MODE);
  }

  /**
   * After close a record is dropped: the process is on its way out (where it echoes its log, stderr
   * still has it), and its descriptor number may already name another file.
   */
  append(record: LogRecord): void {
    if (!this.closed) writeSync(this.fd, recordBytes(record));
  }

  /** A pino destination: pino hands over one serialized record per call. */
  write(line: string): void {
    this.append(line);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    closeSync(this.fd);
  }
}
