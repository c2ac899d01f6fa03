// `turnhost delete`, `archive`, `unarchive`, `pin` and `unpin` declared (PROTOCOL.md §2.3); the
// bodies are session-life.ts.
import type { Command } from 'commander';
import { homeFrom } from '../../protocol/home-paths.js';
import { homeOption } from '../cli-options.js';
import { run } from '../run-command.js';
import type { CommandTable } from '../command-table.js';

/** A session deleted for good. */
function declareDelete(program: Command): void {
  program
    .command('delete')
    .description('delete a session for good: its history, queue, shares, schedules, agent home and the workspace turnhost made (PROTOCOL.md §2.3); through the daemon')
    .argument('<id>', 'the session')
    .option('--yes', 'do not ask (needed when stdin is not a terminal)')
    .option('--interrupt', 'end a running turn first (else a running turn refuses the delete)')
    .addOption(homeOption())
    .action((id: string, opts) => run('delete', async () => (await import('./session-life.js')).deleteCommand(homeFrom(opts.home), id, opts)));
}

const MARKS = {
  archive: 'take a session out of the lists; everything is kept, and a prompt brings it back',
  unarchive: 'bring an archived session back into the lists',
  pin: 'keep a session through retention (--retention-days)',
  unpin: 'let retention take a session again',
} as const;

/** `archive`, `unarchive`, `pin` or `unpin`. */
function declareMark(program: Command, mark: keyof typeof MARKS): void {
  program
    .command(mark)
    .description(`${MARKS[mark]}; through the daemon`)
    .argument('<id>', 'the session')
    .addOption(homeOption())
    .action((id: string, opts) => run(mark, async () => (await import('./session-life.js')).markCommand(homeFrom(opts.home), id, mark)));
}

export const COMMANDS: CommandTable = {
  delete: declareDelete,
  archive: (program) => declareMark(program, 'archive'),
  unarchive: (program) => declareMark(program, 'unarchive'),
  pin: (program) => declareMark(program, 'pin'),
  unpin: (program) => declareMark(program, 'unpin'),
};
