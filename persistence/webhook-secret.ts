// The webhooks' signing secret (PROTOCOL.md §8.2): `whsec_` and 24 random bytes in base64, as the
// Standard Webhooks libraries take it, in `<home>/webhook.secret` (0600), made at first use;
// `turnhost webhook secret --rotate` replaces it and the daemon signs with the new one within a second.
// It is printed only by `webhook secret`; never logged, never in an error.
import { randomBytes } from 'node:crypto';
import { closeSync, openSync, readFileSync, renameSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';

export function webhookSecretPath(home: string): string {
  return join(home, 'webhook.secret');
}

export function readOrMakeWebhookSecret(home: string): string {
  try {
    return readFileSync(webhookSecretPath(home), 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  try {
    return writeSecret(home, 'wx');
  } catch (err) {
    // Another process made it between the read and the write: theirs is the secret.
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return readFileSync(webhookSecretPath(home), 'utf8').trim();
  }
}

export function rotateWebhookSecret(home: string): string {
  return writeSecret(home, 'w');
}

function writeSecret(home: string, flag: 'w' | 'wx'): string {
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const path = webhookSecretPath(home);
  const target = flag === 'wx' ? path : `${path}.new`;
  const fd = openSync(target, flag, 0o600);
  try {
    writeSync(fd, `${secret}\n`);
  } finally {
    closeSync(fd);
  }
  if (target !== path) renameSync(target, path);
  return secret;
}

/** How often the file is looked at for a rotation: a stat per delivery was a syscall per event. */
const LOOK_EVERY_MS = 1000;

/** The secret now: the file is looked at once a second at most, and read again only when it changed. */
export class WebhookSecret {
  private cached: { secret: string; mtimeMs: number; ino: number } | null = null;
  private lookedAt = 0;

  constructor(private readonly home: string) {
    readOrMakeWebhookSecret(home);
  }

  current(): string {
    const now = Date.now();
    if (this.cached !== null && now - this.lookedAt < LOOK_EVERY_MS) return this.cached.secret;
    this.lookedAt = now;
    const stat = statSync(webhookSecretPath(this.home));
    if (this.cached === null || this.cached.mtimeMs !== stat.mtimeMs || this.cached.ino !== stat.ino) {
      this.cached = { secret: readOrMakeWebhookSecret(this.home), mtimeMs: stat.mtimeMs, ino: stat.ino };
    }
    return this.cached.secret;
  }
}
