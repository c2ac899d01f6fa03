// pino to stderr, synchronously (a record is on its way before the process can exit).
import pino, { type Logger } from 'pino';

export type { Logger };

export function createLogger(name: string, env: Readonly<Record<string, string | undefined>> = process.env): Logger {
  return pino({ name, level: env['TURNHOST_LOG_LEVEL'] ?? 'info', base: { pid: process.pid } }, pino.destination({ dest: 2, sync: true }));
}
