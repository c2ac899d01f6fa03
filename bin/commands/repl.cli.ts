// `turnhost repl` declared (PROTOCOL.md §3); the body is repl.ts.
import type { Command } from 'commander';
import { homeFrom } from '../../protocol/home-paths.js';
import { homeOption, storeOption } from '../cli-options.js';
import { run } from '../run-command.js';
import type { CommandTable } from '../command-table.js';

/** The debug REPL. */
function declareRepl(program: Command): void {
  program
    .command('repl')
    .description("the debug REPL of the running daemon (or, with --offline, the database's commands)")
    .addOption(homeOption())
    .option('--offline', 'no daemon: the database and log commands only')
    .addOption(storeOption())
    .action((opts) => run('repl', async () => (await import('./repl.js')).replCommand(homeFrom(opts.home), { offline: opts.offline === true, store: opts.store })));
}

export const COMMANDS: CommandTable = { repl: declareRepl };
