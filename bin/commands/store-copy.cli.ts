// `turnhost store copy` declared (PROTOCOL.md §2.3, §6); the body is store-copy.ts.
import type { Command } from 'commander';
import { homeFrom } from '../../protocol/home-paths.js';
import { homeOption } from '../cli-options.js';
import { run } from '../run-command.js';
import type { CommandTable } from '../command-table.js';

/** The store as a whole: `store copy`. */
function declareStore(program: Command): void {
  const store = program.command('store').description('the store as a whole (PROTOCOL.md §2.3, §6)');
  store
    .command('copy')
    .description('copy every session, branch, turn, usage row, person, share, schedule and webhook state to another store, and check the copy; the daemons of both must be stopped')
    .requiredOption('--to <sqlite|postgres://…>', "the store to copy to: sqlite (the home's turnhost.db) or a PostgreSQL URL")
    .option('--from <sqlite|postgres://…>', "the store to copy from (default: the home's: $TURNHOST_STORE, else sqlite)")
    .option('--resume', 'finish a copy that was cut short: rows already copied are left as they are')
    .addOption(homeOption())
    .action((opts) => run('store copy', async () => (await import('./store-copy.js')).storeCopyCommand(homeFrom(opts.home), opts)));
}

export const COMMANDS: CommandTable = { store: declareStore };
