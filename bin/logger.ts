// pino to stderr (or to the descriptor a daemon gave its host for records), synchronously: a record
// is on its way before the process can exit.
import pino, { type Logger } from 'pino';
import { onceASecond } from './log-repeats.js';

export type { Logger };

const STDERR_FD = 2;

export interface LoggerOptions {
  env?: Readonly<Record<string, string | undefined>>;
  fd?: number;
  /** Applied to every serialized record: takes out a secret that a message may carry. */
  redact?: (line: string) => string;
}

export function createLogger(name: string, options: LoggerOptions = {}): Logger {
  const { env = process.env, fd = STDERR_FD, redact } = options;
  return pino(
    { name, level: env['TURNHOST_LOG_LEVEL'] ?? 'info', base: { pid: process.pid }, hooks: { logMethod: onceASecond(), ...(redact ? { streamWrite: redact } : {}) } },
    pino.destination({ dest: fd, sync: true }),
  );
}
