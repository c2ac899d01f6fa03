// `turnhost sessions` and `history` declared (PROTOCOL.md §3); the bodies are sessions.ts.
import type { Command } from 'commander';
import { homeFrom } from '../../protocol/home-paths.js';
import { homeOption, storeOption } from '../cli-options.js';
import { run } from '../run-command.js';
import type { CommandTable } from '../command-table.js';

/** The sessions, from the store. */
function declareSessions(program: Command): void {
  program
    .command('sessions')
    .description("list sessions from the home's database (works with the daemon down)")
    .addOption(homeOption())
    .option('--json', 'print one JSON array')
    .option('--status <status>', 'only sessions with this status: active, finalized or retained')
    .option('--archived', 'archived sessions too')
    .addOption(storeOption())
    .action((opts) => run('sessions', async () => (await import('./sessions.js')).sessionsCommand(homeFrom(opts.home), opts)));
}

/** A session's messages, from the store. */
function declareHistory(program: Command): void {
  program
    .command('history')
    .description("print one session's messages from the database")
    .argument('<id>', 'the session id')
    .addOption(homeOption())
    .option('--json', 'print one JSON array')
    .option('--all', 'with the turns rewinds, retries and edits superseded (PROTOCOL.md §2.2)')
    .addOption(storeOption())
    .action((id: string, opts) => run('history', async () => (await import('./sessions.js')).historyCommand(homeFrom(opts.home), id, opts)));
}

export const COMMANDS: CommandTable = { sessions: declareSessions, history: declareHistory };
