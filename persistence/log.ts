// Log records: one JSON object per line, each appended with exactly one write() on a descriptor
// opened with O_APPEND (mode 0600). With O_APPEND the kernel moves to the end and writes as one
// step, so concurrent writers (threads or processes) never interleave inside a record. A short
// write is not retried: a retry would be a second write, and could land inside another record.
import { closeSync, constants, fstatSync, mkdirSync, openSync, renameSync, writeSync } from 'node:fs';
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

/** A log file rotates past this size: `turnhost.log` becomes `.1`, `.1` becomes `.2`, and so on. */
export const LOG_ROTATE_BYTES = 10 * 1024 * 1024;
/** The old files kept beside the current one. */
export const LOG_KEPT_FILES = 3;
/**
 * The audit log (PROTOCOL.md §5.6) is kept longer: 64 MiB a file, ten old ones, some four million
 * actions. Past that the oldest file goes, as with the log, so a busy daemon cannot fill the disk.
 */
export const AUDIT_ROTATE_BYTES = 64 * 1024 * 1024;
export const AUDIT_KEPT_FILES = 10;

/**
 * A log file kept open for a process's lifetime; the same one-write-per-record rule. It is rotated
 * by size, so that no flood (a client that sends bad frames all day) fills the disk: the daemon is
 * the file's one long-lived writer, and a command that appends a record now and then opens it by
 * its path, so it follows the rotation.
 */
export class LogFile {
  private fd: number;
  private size: number;
  private closed = false;

  constructor(
    readonly path: string,
    private readonly rotateBytes = LOG_ROTATE_BYTES,
    private readonly keptFiles = LOG_KEPT_FILES,
  ) {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    this.fd = openSync(path, APPEND_FLAGS, LOG_MODE);
    this.size = fstatSync(this.fd).size;
  }

  /**
   * After close a record is dropped: the process is on its way out (where it echoes its log, stderr
   * still has it), and its descriptor number may already name another file.
   */
  append(record: LogRecord): void {
    if (this.closed) return;
    const bytes = recordBytes(record);
    if (this.size > 0 && this.size + bytes.length > this.rotateBytes) this.rotate();
    this.size += writeSync(this.fd, bytes);
  }

  private rotate(): void {
    closeSync(this.fd);
    for (let n = this.keptFiles - 1; n >= 1; n--) renameQuietly(`${this.path}.${n}`, `${this.path}.${n + 1}`);
    renameQuietly(this.path, `${this.path}.1`);
    this.fd = openSync(this.path, APPEND_FLAGS, LOG_MODE);
    this.size = fstatSync(this.fd).size;
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

/** A file that is not there (never rotated so far) is nothing to move. */
function renameQuietly(from: string, to: string): void {
  try {
    renameSync(from, to);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}
