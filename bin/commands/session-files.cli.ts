// `turnhost export` and `import` declared (PROTOCOL.md §2.3, §3); the bodies are session-files.ts.
import type { Command } from 'commander';
import { homeFrom } from '../../protocol/home-paths.js';
import { homeOption, storeOption } from '../cli-options.js';
import { run } from '../run-command.js';
import type { CommandTable } from '../command-table.js';

/** A session as JSON lines. */
function declareExport(program: Command): void {
  program
    .command('export')
    .description("one session as JSON lines: its turns and messages, superseded ones too, with their usage (PROTOCOL.md §2.3); from the store, daemon up or down")
    .argument('<id>', 'the session')
    .option('--out <file>', 'write it to this file (default: stdout)')
    .addOption(homeOption())
    .addOption(storeOption())
    .action((id: string, opts) => run('export', async () => (await import('./session-files.js')).exportCommand(homeFrom(opts.home), id, opts)));
}

/** A session file as a new session. */
function declareImport(program: Command): void {
  program
    .command('import')
    .description("a session file made by export, as a new session of this home's owner; the whole file is checked first, then written in one transaction")
    .argument('<file>', 'the file')
    .option('--as <id>', "the new session's id (default: made up)")
    .addOption(homeOption())
    .addOption(storeOption())
    .action((file: string, opts) => run('import', async () => (await import('./session-files.js')).importCommand(homeFrom(opts.home), file, opts)));
}

export const COMMANDS: CommandTable = { export: declareExport, import: declareImport };
