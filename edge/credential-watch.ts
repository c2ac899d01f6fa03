// A token rotation ends everything the old token opened (PROTOCOL.md §5.1): a stolen token is
// rotated to lock its thief out, and a WebSocket or an event stream it opened must not outlive
// that ("assume breach"). Page logins made with the old token already fail their next request
// (access.ts); the connections they opened are ended here too. The token file is looked at every
// second (a stat), so a rotation closes them within 2 s.
import type { Logger } from 'pino';
import type { TokenSource } from './http-token.js';

const LOOK_EVERY_MS = 1000;

export class CredentialWatch {
  private readonly open = new Set<() => void>();
  private last: string | null;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly tokens: TokenSource,
    private readonly log: Logger,
  ) {
    this.last = this.current();
    this.timer = setInterval(() => this.look(), LOOK_EVERY_MS);
    this.timer.unref();
  }

  /** A connection the token (or a page login made with it) opened: `end` closes it when the token changes. Returns the forget. */
  opened(end: () => void): () => void {
    this.open.add(end);
    return () => this.open.delete(end);
  }

  close(): void {
    clearInterval(this.timer);
  }

  private current(): string | null {
    try {
      return this.tokens.current();
    } catch {
      return null; // the file is being replaced: the next look sees the new one
    }
  }

  private look(): void {
    const now = this.current();
    if (now === null || now === this.last) return;
    this.last = now;
    const ends = [...this.open];
    this.open.clear();
    if (ends.length > 0) this.log.info({ closed: ends.length }, 'the token was rotated: the connections the old one opened are closed');
    for (const end of ends) end();
  }
}
