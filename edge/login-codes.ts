// Single-use login codes (PROTOCOL.md §5.1): `turnhost web --open` hands a browser
// `/login?once=<code>` instead of the token, since an opener's command line is shown by `ps` to
// every local user. The code is kept in the home (0700 folder, 0600 file, as the token is), named
// by its SHA-256, made by the command and taken by the edge: once, within 60 s. Taking it is
// removing its file, so of two requests with one code exactly one logs in.
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const LOGIN_CODE_TTL_MS = 60_000;

function codesDir(home: string): string {
  return join(home, 'state', 'login-codes');
}

function fileOf(home: string, code: string): string {
  return join(codesDir(home), createHash('sha256').update(code).digest('hex'));
}

export function makeLoginCode(home: string): string {
  mkdirSync(codesDir(home), { recursive: true, mode: 0o700 });
  forgetExpired(home);
  const code = randomBytes(24).toString('base64url');
  writeFileSync(fileOf(home, code), String(Date.now()), { mode: 0o600, flag: 'wx' });
  return code;
}

/** True once for a code made within LOGIN_CODE_TTL_MS; false for anything else, and ever after. */
export function takeLoginCode(home: string, code: string): boolean {
  if (!/^[\w-]{16,64}$/.test(code)) return false;
  const path = fileOf(home, code);
  let madeMs: number;
  try {
    madeMs = Number(readFileSync(path, 'utf8'));
    unlinkSync(path);
  } catch {
    return false; // never made, or taken already
  }
  return Date.now() - madeMs <= LOGIN_CODE_TTL_MS;
}

/** Codes nobody used are removed by the next one made. */
function forgetExpired(home: string): void {
  for (const name of readdirSync(codesDir(home))) {
    const path = join(codesDir(home), name);
    try {
      if (Date.now() - statSync(path).mtimeMs > LOGIN_CODE_TTL_MS) rmSync(path, { force: true });
    } catch {
      // taken meanwhile
    }
  }
}
