// `turnhost start`, `stop` and `status` declared (PROTOCOL.md §3); the bodies are lifecycle.ts.
import type { Command } from 'commander';
import { homeFrom } from '../../protocol/home-paths.js';
import { homeOption, maxClientsOption, maxUnreadOption, seconds } from '../cli-options.js';
import { beforeDaemonStart, contentArgs, contentOptions, httpArgs, httpFrom, httpOptions, retentionArgs, retentionOptions, webhookArgs, webhookOptions } from '../daemon-flags.js';
import { hostArgs, hostOptions } from '../host-options.js';
import { run } from '../run-command.js';
import type { CommandTable } from '../command-table.js';

/** The daemon in the background; its options passed on as its arguments. */
function declareStart(program: Command): void {
  contentOptions(retentionOptions(webhookOptions(httpOptions(hostOptions(program.command('start').description("start the daemon in the background; prints its pid once its host has said hello"))))))
    .addOption(homeOption())
    .addOption(maxClientsOption())
    .addOption(maxUnreadOption())
    .action((opts) =>
      run('start', async () => {
        await beforeDaemonStart(opts);
        // A bad --listen is one line here, not a daemon that fails in the background.
        httpFrom(opts);
        const daemonArgs = [
          ...(opts.maxClients === undefined ? [] : ['--max-clients', String(opts.maxClients)]),
          ...(opts.maxUnreadMib === undefined ? [] : ['--max-unread-mib', String(opts.maxUnreadMib)]),
          ...httpArgs(opts),
          ...webhookArgs(opts),
          ...retentionArgs(opts),
          ...contentArgs(opts),
        ];
        const { startCommand } = await import('./lifecycle.js');
        return startCommand(homeFrom(opts.home), [...hostArgs(opts), ...daemonArgs]);
      }),
    );
}

/** A graceful stop. */
function declareStop(program: Command): void {
  program
    .command('stop')
    .description('stop the daemon gracefully; prints how many sessions were finalized and retained')
    .addOption(homeOption())
    .option('--wait <seconds>', 'drain budget of the host (default 10)', seconds)
    .action((opts) => run('stop', async () => (await import('./lifecycle.js')).stopCommand(homeFrom(opts.home), opts.wait)));
}

/** The supervisor, the host and the sessions. */
function declareStatus(program: Command): void {
  program
    .command('status')
    .description('the supervisor, the host and the sessions')
    .addOption(homeOption())
    .option('--json', 'print one JSON document')
    .action((opts) => run('status', async () => (await import('./lifecycle.js')).statusCommand(homeFrom(opts.home), opts.json === true)));
}

export const COMMANDS: CommandTable = { start: declareStart, stop: declareStop, status: declareStatus };
