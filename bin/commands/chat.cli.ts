// `turnhost chat` declared (PROTOCOL.md §3); the body is chat.ts.
import type { Command } from 'commander';
import { homeFrom } from '../../protocol/home-paths.js';
import { collect, homeOption } from '../cli-options.js';
import { beforeDaemonStart } from '../daemon-flags.js';
import { hostArgs, hostOptions } from '../host-options.js';
import { run } from '../run-command.js';
import type { CommandTable } from '../command-table.js';

/** One turn, or a prompt loop. */
function declareChat(program: Command): void {
  hostOptions(program.command('chat').description('one turn (TEXT), or a prompt loop; starts the daemon when none runs'))
    .argument('[text]', 'the prompt; without it, prompts are read line by line')
    .addOption(homeOption())
    .option('--session <id>', 'the session to use (default: a new one)')
    .option('--attach <file>', 'a file for the (first) prompt: an image, a PDF, text (repeatable)', collect, [])
    .action((text: string | undefined, opts) =>
      run('chat', async () => {
        await beforeDaemonStart(opts);
        const { chatCommand } = await import('./chat.js');
        return chatCommand(homeFrom(opts.home), {
          ...(opts.session ? { session: opts.session } : {}),
          ...(text !== undefined ? { text } : {}),
          ...(opts.agent ? { agent: opts.agent } : {}),
          attach: opts.attach,
          hostArgs: hostArgs(opts),
        });
      }),
    );
}

export const COMMANDS: CommandTable = { chat: declareChat };
