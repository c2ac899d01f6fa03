// `turnhost schedule` and `webhook secret` declared (PROTOCOL.md §8); the bodies are schedules.ts.
import type { Command } from 'commander';
import { homeFrom } from '../../protocol/home-paths.js';
import { homeOption, positiveInteger } from '../cli-options.js';
import { run } from '../run-command.js';
import type { CommandTable } from '../command-table.js';

/** Schedules: add, list, rm. */
function declareSchedule(program: Command): void {
  const schedule = program.command('schedule').description('prompts that run on their own, on a plan (PROTOCOL.md §8.1); through the running daemon');
  schedule
    .command('add')
    .description('submit TEXT to SESSION on a plan: --cron, --every or --at (one of them)')
    .argument('<session>', 'the session (made when it does not exist)')
    .argument('<text>', 'the prompt')
    .option('--cron <expr>', 'a cron expression: 5 fields, or 6 with seconds first')
    .option('--every <secs>', 'every this many seconds', positiveInteger)
    .option('--at <time>', 'once, at this ISO 8601 time')
    .option('--tz <zone>', "the cron's IANA time zone (default UTC)")
    .option('--catch-up <one|none>', 'fires missed while turnhost was down: one fire at start (one, the default) or none')
    .option('--on-busy <queue|reject>', 'when a turn runs: queue the fire behind it (the default) or skip it')
    .addOption(homeOption())
    .action((session: string, text: string, opts) => run('schedule', async () => (await import('./schedules.js')).scheduleAddCommand(homeFrom(opts.home), session, text, opts)));
  schedule
    .command('list')
    .description('the schedules: plan, next and last fire, how many fires')
    .option('--json', 'print one JSON array')
    .addOption(homeOption())
    .action((opts) => run('schedule', async () => (await import('./schedules.js')).scheduleListCommand(homeFrom(opts.home), opts)));
  schedule
    .command('rm')
    .description('delete a schedule')
    .argument('<id>', 'the schedule id')
    .addOption(homeOption())
    .action((id: string, opts) => run('schedule', async () => (await import('./schedules.js')).scheduleRemoveCommand(homeFrom(opts.home), id)));
}

/** The webhooks' secret. */
function declareWebhook(program: Command): void {
  program
    .command('webhook')
    .description('the webhooks (PROTOCOL.md §8.2)')
    .command('secret')
    .description('print the secret the webhooks are signed with (made when there is none); --rotate replaces it')
    .option('--rotate', 'make a new secret; the daemon signs with it within a second')
    .addOption(homeOption())
    .action((opts) => run('webhook', async () => (await import('./schedules.js')).webhookSecretCommand(homeFrom(opts.home), opts.rotate === true)));
}

export const COMMANDS: CommandTable = { schedule: declareSchedule, webhook: declareWebhook };
