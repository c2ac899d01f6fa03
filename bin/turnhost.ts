#!/usr/bin/env node
// The turnhost command line (PROTOCOL.md §3). Wiring only: each command's body is in commands/.
import { Command, InvalidArgumentError, Option } from 'commander';
import { hostCommand } from './commands/host.js';
import { historyCommand, sessionsCommand } from './commands/sessions.js';
import { homeFrom } from './home.js';
import { parsePositiveInteger } from './host-options.js';

function positiveInteger(text: string): number {
  const value = parsePositiveInteger(text);
  if (value === undefined) throw new InvalidArgumentError('must be a positive integer');
  return value;
}

function seconds(text: string): number {
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value)) throw new InvalidArgumentError('must be a number of seconds');
  return value;
}

const homeOption = () => new Option('--home <dir>', 'home folder (default: $TURNHOST_HOME, else ~/.turnhost)');

function hostOptions(command: Command): Command {
  return command
    .option('--agent <name|path>', 'the agent: a built-in name (script) or a path to an ES module', 'script')
    .option('--workers <n>', 'turns that may run at once (default: $TURNHOST_WORKERS, else 8)', positiveInteger)
    .option('--heartbeat-secs <s>', 'heartbeat period; <= 0 turns heartbeat and parent guard off (default 5)', seconds);
}

/** Runs a command body and exits with its code once its output is written. */
async function run(body: () => number | Promise<number>): Promise<void> {
  const code = await body();
  process.exitCode = code;
  process.exit(code);
}

const program = new Command('turnhost')
  .description('A crash-safe host for long-running AI agent sessions')
  .showHelpAfterError()
  .enablePositionalOptions();

hostOptions(program.command('host').description('run the compute host on stdin/stdout (the host protocol)'))
  .addOption(homeOption())
  .action((opts) => run(() => hostCommand({ home: homeFrom(opts.home), agent: opts.agent, workers: opts.workers, heartbeatSecs: opts.heartbeatSecs })));

program
  .command('sessions')
  .description("list sessions from the home's database (works with the daemon down)")
  .addOption(homeOption())
  .option('--json', 'print one JSON array')
  .option('--status <status>', 'only sessions with this status: active, finalized or retained')
  .action((opts) => run(() => sessionsCommand(homeFrom(opts.home), opts)));

program
  .command('history')
  .description("print one session's messages from the database")
  .argument('<id>', 'the session id')
  .addOption(homeOption())
  .option('--json', 'print one JSON array')
  .action((id: string, opts) => run(() => historyCommand(homeFrom(opts.home), id, opts)));

await program.parseAsync(process.argv);
