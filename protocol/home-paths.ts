// The home folder: --home, else $TURNHOST_HOME, else ~/.turnhost; and where its files are. The
// client library finds a daemon's socket here as the CLI does, so this sits below both.
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

export function homeFrom(flag: string | undefined, env: Readonly<Record<string, string | undefined>> = process.env): string {
  return resolve(flag ?? env['TURNHOST_HOME'] ?? join(homedir(), '.turnhost'));
}

export function homePaths(home: string) {
  return {
    database: join(home, 'turnhost.db'),
    socket: join(home, 'turnhost.sock'),
    replSocket: join(home, 'repl.sock'),
    registry: join(home, 'state', 'compute-host.json'),
    log: join(home, 'logs', 'turnhost.log'),
    audit: join(home, 'logs', 'audit.log'),
  };
}
