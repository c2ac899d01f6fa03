// `turnhost acp` declared (PROTOCOL.md §7.2); the body is acp.ts.
import type { Command } from 'commander';
import { homeFrom } from '../../protocol/home-paths.js';
import { homeOption } from '../cli-options.js';
import { beforeDaemonStart } from '../daemon-flags.js';
import { hostArgs, hostOptions } from '../host-options.js';
import { run } from '../run-command.js';
import type { CommandTable } from '../command-table.js';

/** An ACP agent on stdin/stdout, for editors. */
function declareAcp(program: Command): void {
  hostOptions(program.command('acp').description('an Agent Client Protocol agent on stdin/stdout, for editors; starts the daemon when none runs'))
    .addOption(homeOption())
    .action((opts) =>
      run('acp', async () => {
        await beforeDaemonStart(opts);
        const { acpCommand } = await import('./acp.js');
        return acpCommand(homeFrom(opts.home), { hostArgs: hostArgs(opts), ...(opts.agent ? { agent: opts.agent } : {}) });
      }),
    );
}

export const COMMANDS: CommandTable = { acp: declareAcp };
