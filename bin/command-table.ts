// How the command line is put together (bin/turnhost.ts): each file `commands/<name>.cli.ts`
// declares its commands (arguments, options, help) beside their bodies in `commands/<name>.ts`,
// and exports them as a table by name.
import type { Command } from 'commander';

/** Declares one command (or one command with its subcommands) on the program. */
export type Declare = (program: Command) => void;

/** A file's commands by the name they are called by. */
export type CommandTable = Readonly<Record<string, Declare>>;
