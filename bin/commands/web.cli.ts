// `turnhost web` and `token` declared (PROTOCOL.md §3, §5.5); the bodies are web.ts.
import type { Command } from 'commander';
import { parseListenAddress } from '../../edge/listen-address.js';
import { homeFrom } from '../../protocol/home-paths.js';
import { homeOption, loginDaysOption } from '../cli-options.js';
import { beforeDaemonStart, contentArgs, contentOptions, jwtArgs, jwtFrom, jwtOptions, retentionArgs, retentionOptions, webhookArgs, webhookOptions } from '../daemon-flags.js';
import { hostArgs, hostOptions } from '../host-options.js';
import { run } from '../run-command.js';
import type { CommandTable } from '../command-table.js';

/** The page, with a daemon that listens when none runs. */
function declareWeb(program: Command): void {
  contentOptions(retentionOptions(webhookOptions(jwtOptions(hostOptions(program.command('web').description('the page: starts the daemon listening on 127.0.0.1:7433 when none runs, prints the login address'))))))
    .addOption(homeOption())
    .option('--listen <host:port>', 'where a daemon started here listens (default 127.0.0.1:7433)')
    .option('--open', 'also open a single-use login address in a browser (the token is never on its command line)')
    .addOption(loginDaysOption())
    .action((opts) =>
      run('web', async () => {
        await beforeDaemonStart(opts);
        const { DEFAULT_WEB_LISTEN, webCommand } = await import('./web.js');
        const listen = opts.listen ?? DEFAULT_WEB_LISTEN;
        parseListenAddress(listen);
        const loginDays = opts.loginDays === undefined ? [] : ['--login-days', String(opts.loginDays)];
        jwtFrom(opts);
        return webCommand(homeFrom(opts.home), { daemonArgs: [...hostArgs(opts), '--listen', listen, ...loginDays, ...jwtArgs(opts), ...webhookArgs(opts), ...retentionArgs(opts), ...contentArgs(opts)], open: opts.open === true });
      }),
    );
}

/** The HTTP edge's token. */
function declareToken(program: Command): void {
  program
    .command('token')
    .description("print the HTTP edge's token (made when there is none); --rotate replaces it and ends the page logins made with the old one")
    .addOption(homeOption())
    .option('--rotate', 'make a new token')
    .action((opts) => run('token', async () => (await import('./web.js')).tokenCommand(homeFrom(opts.home), opts.rotate === true)));
}

export const COMMANDS: CommandTable = { web: declareWeb, token: declareToken };
