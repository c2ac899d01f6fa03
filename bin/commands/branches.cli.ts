// `turnhost fork`, `rewind` and `retry` declared (PROTOCOL.md §2.2, §3); the bodies are branches.ts.
import type { Command } from 'commander';
import { homeFrom } from '../../protocol/home-paths.js';
import { homeOption } from '../cli-options.js';
import { run } from '../run-command.js';
import type { CommandTable } from '../command-table.js';

/** A fork of a session at a turn. */
function declareFork(program: Command): void {
  program
    .command('fork')
    .description("a new session whose history is this one's up to a turn (the last that ended, or --at); through the daemon")
    .argument('<id>', 'the session to fork')
    .option('--at <turn>', 'the turn to fork at (default: the last that ended)')
    .option('--as <new-id>', "the new session's id (default: made up)")
    .option('--cwd <dir>', "the new session's folder (default: a new workspace); a guest that keeps its memory by folder needs its source's")
    .option('--json', 'print the result as JSON')
    .addOption(homeOption())
    .action((id: string, opts) => run('fork', async () => (await import('./branches.js')).forkCommand(homeFrom(opts.home), id, opts)));
}

/** A session back to just after a turn. */
function declareRewind(program: Command): void {
  program
    .command('rewind')
    .description('the session goes back to just after a turn; the turns after it are superseded, not deleted; through the daemon')
    .argument('<id>', 'the session')
    .requiredOption('--to <turn>', 'the turn to keep last (start: before the first)')
    .addOption(homeOption())
    .action((id: string, opts) => run('rewind', async () => (await import('./branches.js')).rewindCommand(homeFrom(opts.home), id, opts)));
}

/** A session's last turn again. */
function declareRetry(program: Command): void {
  program
    .command('retry')
    .description("the session's last turn again: its prompt resubmitted, the old turn superseded; through the daemon")
    .argument('<id>', 'the session')
    .addOption(homeOption())
    .action((id: string, opts) => run('retry', async () => (await import('./branches.js')).retryCommand(homeFrom(opts.home), id)));
}

export const COMMANDS: CommandTable = { fork: declareFork, rewind: declareRewind, retry: declareRetry };
