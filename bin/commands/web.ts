// `turnhost web` and `turnhost token` (PROTOCOL.md §5): the page's login address, and the edge's
// token. `web` starts the daemon listening on 127.0.0.1:7433 when none runs.
import { spawn } from 'node:child_process';
import { connectDaemon, launchDaemon } from '../daemon-client.js';
import { ensureHome } from '../home.js';
import { readOrMakeToken, rotateToken } from '../../edge/http-token.js';
import { makeLoginCode } from '../../edge/login-codes.js';

export const DEFAULT_WEB_LISTEN = '127.0.0.1:7433';

export async function webCommand(homeDir: string, options: { daemonArgs: string[]; open: boolean }): Promise<number> {
  const home = ensureHome(homeDir);
  let client = await connectDaemon(home);
  if (client === null) {
    const launch = await launchDaemon(home, options.daemonArgs);
    if (!launch.ok && !launch.alreadyRunning) {
      process.stderr.write(`turnhost web: ${launch.message}\n`);
      return 1;
    }
    client = await connectDaemon(home);
    if (client === null) {
      process.stderr.write(`turnhost web: the daemon in ${home} did not answer\n`);
      return 1;
    }
  }
  const status = await client.call<{ http?: { url: string } }>('host.status').finally(() => client.close());
  if (status.http === undefined) {
    process.stderr.write(`turnhost web: the daemon running in ${home} does not serve HTTP: stop it (turnhost stop) and run turnhost web again, or start it with --listen\n`);
    return 1;
  }
  const address = `${status.http.url}/login?token=${encodeURIComponent(currentToken(home))}`;
  process.stdout.write(`${address}\n`);
  // The opener's command line is visible to every local user (ps): it gets a single-use code, not the token.
  if (options.open) openInBrowser(`${status.http.url}/login?once=${makeLoginCode(home)}`);
  return 0;
}

export function tokenCommand(homeDir: string, rotate: boolean): number {
  const home = ensureHome(homeDir);
  if (process.env['TURNHOST_TOKEN']) {
    if (rotate) {
      process.stderr.write('turnhost token: the token comes from $TURNHOST_TOKEN: change it there, and restart the daemon\n');
      return 1;
    }
    process.stdout.write(`${process.env['TURNHOST_TOKEN']}\n`);
    return 0;
  }
  process.stdout.write(`${rotate ? rotateToken(home) : readOrMakeToken(home)}\n`);
  return 0;
}

function currentToken(home: string): string {
  return process.env['TURNHOST_TOKEN'] || readOrMakeToken(home);
}

/** The desktop's browser, if it has one; the address is printed either way. */
function openInBrowser(address: string): void {
  const child = spawn(process.platform === 'darwin' ? 'open' : 'xdg-open', [address], { detached: true, stdio: 'ignore' });
  child.on('error', () => process.stderr.write('turnhost web: could not open a browser here; open the address above\n'));
  child.unref();
}
