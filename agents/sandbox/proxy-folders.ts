// Where each sandbox's proxy socket lies (AGENT.md §7): a folder of its own under `<home>/run/`,
// removed with its sandbox; what a host that died left there is removed when the next host starts.
// Imports nothing but Node's own: every host calls removeDeadProxies, whatever agents it runs.
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const PROXY_SOCKET = 'proxy.sock';
/** A unix socket's path, with its terminating NUL (sun_path). */
const UNIX_PATH_MAX = 108;

/**
 * A folder of its own (0700) for a sandbox's proxy socket: in the home, or, when the home's path is
 * so long that a socket's path in it would pass the kernel's bound (108 bytes), in the host's tmp.
 */
export function proxyFolder(home: string): string {
  const inHome = join(home, 'run', randomBytes(6).toString('hex'));
  if (join(inHome, PROXY_SOCKET).length < UNIX_PATH_MAX) {
    mkdirSync(inHome, { recursive: true, mode: 0o700 });
    return inHome;
  }
  return mkdtempSync(join(tmpdir(), 'turnhost-proxy-'));
}

/** The proxies' folder a host that died left: removed once, when a host starts, before any sandbox is made. */
export function removeDeadProxies(home: string): void {
  rmSync(join(home, 'run'), { recursive: true, force: true });
}
