// `turnhost user` and its subcommands declared (PROTOCOL.md §5.6, §5.7); the bodies are users.ts.
import type { Command } from 'commander';
import { homeFrom } from '../../protocol/home-paths.js';
import { homeOption, positiveInteger, storeOption } from '../cli-options.js';
import { run } from '../run-command.js';
import type { CommandTable } from '../command-table.js';

/** The people of this turnhost: add, list, remove, budget. */
function declareUser(program: Command): void {
  const user = program.command('user').description('the people of this turnhost and their personal tokens (PROTOCOL.md §5.6)');
  user
    .command('add')
    .description('make a user and print their token, once (only its SHA-256 is kept)')
    .argument('<name>', "the user's name")
    .option('--admin', 'the user sees and drives every session')
    .addOption(homeOption())
    .addOption(storeOption())
    .action((name: string, opts) => run('user', async () => (await import('./users.js')).userAddCommand(homeFrom(opts.home), name, opts)));
  user
    .command('list')
    .description('the users: name, role, when made and last seen (never a token)')
    .option('--json', 'print one JSON array')
    .addOption(homeOption())
    .addOption(storeOption())
    .action((opts) => run('user', async () => (await import('./users.js')).userListCommand(homeFrom(opts.home), opts)));
  user
    .command('remove')
    .description("end a user: their tokens fail at once, their connections close within 2 s on every node")
    .argument('<name>', "the user's name")
    .addOption(homeOption())
    .addOption(storeOption())
    .action((name: string, opts) => run('user', async () => (await import('./users.js')).userRemoveCommand(homeFrom(opts.home), name, opts)));

  user
    .command('budget')
    .description("a person's budget, or the default for members (--default), per UTC day (PROTOCOL.md §5.7); no limits: show it; no name: list them")
    .argument('[name]', "the user's name")
    .option('--default', "the budget of every member without their own (admins have none by default)")
    .option('--tokens-per-day <n>', 'prompt and completion tokens a day', positiveInteger)
    .option('--turns-per-day <n>', 'turns started a day', positiveInteger)
    .option('--none', 'no budget (a member then has the default)')
    .addOption(homeOption())
    .addOption(storeOption())
    .action((name: string | undefined, opts) => run('user', async () => (await import('./users.js')).userBudgetCommand(homeFrom(opts.home), name, opts)));
}

export const COMMANDS: CommandTable = { user: declareUser };
