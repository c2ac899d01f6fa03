// `turnhost usage` declared (PROTOCOL.md §5.7); the body is usage.ts.
import type { Command } from 'commander';
import { homeFrom } from '../../protocol/home-paths.js';
import { homeOption, storeOption } from '../cli-options.js';
import { run } from '../run-command.js';
import type { CommandTable } from '../command-table.js';

/** The ledger's totals. */
function declareUsage(program: Command): void {
  program
    .command('usage')
    .description("what the turns spent, from the store's ledger (works with the daemon down; PROTOCOL.md §5.7)")
    .option('--by <what>', 'group by person, session, model, agent or day (default: person)')
    .option('--since <date>', 'from this UTC day, YYYY-MM-DD')
    .option('--until <date>', 'to this UTC day, YYYY-MM-DD, inclusive')
    .option('--json', 'print one JSON object')
    .addOption(homeOption())
    .addOption(storeOption())
    .action((opts) => run('usage', async () => (await import('./usage.js')).usageCommand(homeFrom(opts.home), opts)));
}

export const COMMANDS: CommandTable = { usage: declareUsage };
