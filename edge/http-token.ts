// The edge's token (PROTOCOL.md §5.1): $TURNHOST_TOKEN, else <home>/http.token, made at the first
// listen (32 random bytes, base64url, 0600). `turnhost token --rotate` writes a new one; the edge
// reads the file again when it changes, so a rotation takes effect without a restart.
import { randomBytes } from 'node:crypto';
import { closeSync, openSync, readFileSync, renameSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';

const TOKEN_BYTES = 32;

export function tokenPath(home: string): string {
  return join(home, 'http.token');
}

/** The token from the file, made when there is none. */
export function readOrMakeToken(home: string): string {
  try {
    return readToken(home);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    return writeNewToken(home, 'wx');
  }
}

export function readToken(home: string): string {
  return readFileSync(tokenPath(home), 'utf8').trim();
}

/** Replaces the token; written beside and renamed, so a reader never sees half of one. */
export function rotateToken(home: string): string {
  return writeNewToken(home, 'w');
}

function writeNewToken(home: string, flag: 'w' | 'wx'): string {
  const token = randomBytes(TOKEN_BYTES).toString('base64url');
  const path = tokenPath(home);
  const target = flag === 'wx' ? path : `${path}.new`;
  const fd = openSync(target, flag, 0o600);
  try {
    writeSync(fd, `${token}\n`);
  } finally {
    closeSync(fd);
  }
  if (target !== path) renameSync(target, path);
  return token;
}

/** The current token, read again only when the file changed (or from the environment, fixed). */
export class TokenSource {
  private cached: { token: string; mtimeMs: number; ino: number } | null = null;

  constructor(
    private readonly home: string,
    private readonly fromEnv: string | undefined,
  ) {
    if (fromEnv === undefined) readOrMakeToken(home);
  }

  current(): string {
    if (this.fromEnv !== undefined) return this.fromEnv;
    const stat = statSync(tokenPath(this.home));
    if (this.cached === null || this.cached.mtimeMs !== stat.mtimeMs || this.cached.ino !== stat.ino) {
      this.cached = { token: readToken(this.home), mtimeMs: stat.mtimeMs, ino: stat.ino };
    }
    return this.cached.token;
  }
}
