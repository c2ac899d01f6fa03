// A secret kept in a file of the home, mode 0600: the edge's token and the webhooks' signing
// secret. It is made at first use (two processes making it at once agree on one), replaced whole
// (written beside and renamed, so a reader never sees half of one), and a long-lived reader reads
// it again only when the file changed.
import { closeSync, openSync, readFileSync, renameSync, statSync, writeSync } from 'node:fs';

export function readSecretFile(path: string): string {
  return readFileSync(path, 'utf8').trim();
}

/** The secret in the file, made by `make` when there is none. */
export function readOrMakeSecretFile(path: string, make: () => string): string {
  try {
    return readSecretFile(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  try {
    return writeSecretFile(path, make(), 'wx');
  } catch (err) {
    // Another process made it between the read and the write: theirs is the secret.
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return readSecretFile(path);
  }
}

export function replaceSecretFile(path: string, make: () => string): string {
  return writeSecretFile(path, make(), 'w');
}

function writeSecretFile(path: string, secret: string, flag: 'w' | 'wx'): string {
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

/**
 * The secret as the file holds it now, made when missing. `lookEveryMs`: how long a secret read
 * is trusted before the file is looked at again (0: at every call).
 */
export class WatchedSecretFile {
  private cached: { secret: string; mtimeMs: number; ino: number } | null = null;
  private lookedAt = 0;

  constructor(
    private readonly path: string,
    private readonly make: () => string,
    private readonly lookEveryMs = 0,
  ) {
    readOrMakeSecretFile(path, make);
  }

  current(): string {
    const now = Date.now();
    if (this.cached !== null && now - this.lookedAt < this.lookEveryMs) return this.cached.secret;
    this.lookedAt = now;
    const stat = statSync(this.path);
    if (this.cached === null || this.cached.mtimeMs !== stat.mtimeMs || this.cached.ino !== stat.ino) {
      this.cached = { secret: readOrMakeSecretFile(this.path, this.make), mtimeMs: stat.mtimeMs, ino: stat.ino };
    }
    return this.cached.secret;
  }
}
