// The edge's token (PROTOCOL.md §5.1): $TURNHOST_TOKEN, else <home>/http.token, made at the first
// listen (32 random bytes, base64url, 0600). `turnhost token --rotate` writes a new one; the edge
// reads the file again when it changes, so a rotation takes effect without a restart.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { readOrMakeSecretFile, readSecretFile, replaceSecretFile, WatchedSecretFile } from '../persistence/secret-file.js';

const TOKEN_BYTES = 32;

export function tokenPath(home: string): string {
  return join(home, 'http.token');
}

const newToken = (): string => randomBytes(TOKEN_BYTES).toString('base64url');

/** The token from the file, made when there is none. */
export function readOrMakeToken(home: string): string {
  return readOrMakeSecretFile(tokenPath(home), newToken);
}

export function readToken(home: string): string {
  return readSecretFile(tokenPath(home));
}

/** Replaces the token; written beside and renamed, so a reader never sees half of one. */
export function rotateToken(home: string): string {
  return replaceSecretFile(tokenPath(home), newToken);
}

/** The current token, read again only when the file changed (or from the environment, fixed). */
export class TokenSource {
  private readonly file: WatchedSecretFile | null;

  constructor(
    home: string,
    private readonly fromEnv: string | undefined,
  ) {
    this.file = fromEnv === undefined ? new WatchedSecretFile(tokenPath(home), newToken) : null;
  }

  current(): string {
    return this.fromEnv ?? this.file!.current();
  }
}
