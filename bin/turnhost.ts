#!/usr/bin/env node
// The turnhost command line (PROTOCOL.md §3). Each command is declared beside its body in
// commands/ (`stop` in lifecycle.cli.ts, its body in lifecycle.ts), and only the declaration of the
// command being run is loaded, then only its body: loading every command's modules made every
// process load every library (the edge's, the ACP SDK, zod), and the host, which the supervisor
// restarts after a crash, took 0.85 s to start instead of 0.4. `--help`, `help` or a name that is
// no command load them all, in the order help lists them.
// First, before any other module is evaluated: the daemon's heap settings (see daemon-heap.ts).
import './daemon-heap.js';
import { Command } from 'commander';
import { packageVersion } from '../protocol/package-version.js';
import type { CommandTable } from './command-table.js';

type Commands = () => Promise<{ COMMANDS: CommandTable }>;

const lifecycle: Commands = () => import('./commands/lifecycle.cli.js');
const web: Commands = () => import('./commands/web.cli.js');
const sessions: Commands = () => import('./commands/sessions.cli.js');
const branches: Commands = () => import('./commands/branches.cli.js');
const life: Commands = () => import('./commands/session-life.cli.js');
const files: Commands = () => import('./commands/session-files.cli.js');
const schedules: Commands = () => import('./commands/schedules.cli.js');

/** Every command, in the order `turnhost --help` lists them, with the file that declares it. */
const COMMANDS: readonly (readonly [string, Commands])[] = [
  ['host', () => import('./commands/host.cli.js')],
  ['daemon', () => import('./commands/daemon.cli.js')],
  ['start', lifecycle],
  ['web', web],
  ['token', web],
  ['stop', lifecycle],
  ['status', lifecycle],
  ['chat', () => import('./commands/chat.cli.js')],
  ['acp', () => import('./commands/acp.cli.js')],
  ['repl', () => import('./commands/repl.cli.js')],
  ['sessions', sessions],
  ['history', sessions],
  ['fork', branches],
  ['rewind', branches],
  ['retry', branches],
  ['delete', life],
  ['archive', life],
  ['unarchive', life],
  ['pin', life],
  ['unpin', life],
  ['export', files],
  ['import', files],
  ['store', () => import('./commands/store-copy.cli.js')],
  ['user', () => import('./commands/users.cli.js')],
  ['agents', () => import('./commands/agents.cli.js')],
  ['usage', () => import('./commands/usage.cli.js')],
  ['schedule', schedules],
  ['webhook', schedules],
  ['cluster', () => import('./commands/cluster.cli.js')],
];

const program = new Command('turnhost')
  .description('A crash-safe host for long-running AI agent sessions')
  .version(packageVersion(), '-V, --version', 'print the version')
  .showHelpAfterError()
  .enablePositionalOptions();

// The command is always the first argument: the program has no options of its own but -V and -h.
const named = COMMANDS.filter(([name]) => name === process.argv[2]);
for (const [name, declarations] of named.length > 0 ? named : COMMANDS) (await declarations()).COMMANDS[name]!(program);

await program.parseAsync(process.argv);
