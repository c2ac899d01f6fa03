// The home folder made ready for a daemon or a host: created private (0700), entered. Where it
// is and what it holds: protocol/home-paths.ts.
import { chmodSync, mkdirSync, realpathSync, statSync } from 'node:fs';
import { resolve } from 'node:path';

/**
 * Creates the home (0700) when missing and returns its real path. A home that belongs to another
 * user is refused, as ssh refuses a foreign ~/.ssh: its owner could read the sockets' traffic or
 * put a database of its making under this user's daemon.
 */
export function ensureHome(home: string): string {
  mkdirSync(home, { recursive: true, mode: 0o700 });
  const real = realpathSync(home);
  const stat = statSync(real);
  const uid = process.getuid?.();
  if (uid !== undefined && stat.uid !== uid) {
    throw new Error(`the home ${real} belongs to another user (uid ${stat.uid}, you are ${uid}): refusing to use it; choose another --home, or chown it`);
  }
  if ((stat.mode & 0o077) !== 0) chmodSync(real, 0o700);
  return real;
}

/**
 * A daemon or host leaves the folder it was started from for its home, and so do the processes it
 * starts (the host, MCP servers): a caller's folder may hold a planted `node_modules/.bin` that a
 * server started with `npx` would run. A relative $TURNHOST_AGENT_CONFIG or $TURNHOST_HOST_ENTRY
 * still names the file the caller meant: each is made absolute first.
 */
export function enterHome(home: string): void {
  for (const name of ['TURNHOST_AGENT_CONFIG', 'TURNHOST_HOST_ENTRY']) {
    const path = process.env[name];
    if (path) process.env[name] = resolve(path);
  }
  process.chdir(home);
}

