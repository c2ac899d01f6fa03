// `turnhost agents` and `agents reload` declared (AGENT.md §8); the bodies are agents.ts.
import type { Command } from 'commander';
import { homeFrom } from '../../protocol/home-paths.js';
import { homeOption } from '../cli-options.js';
import { run } from '../run-command.js';
import type { CommandTable } from '../command-table.js';

/** The agents, and their reload. */
function declareAgents(program: Command): void {
  const agents = program
    .command('agents')
    .description('the agents a session may be made with (AGENT.md §8), through the running daemon')
    .addOption(homeOption())
    .option('--json', 'print one JSON object')
    .action((opts) => run('agents', async () => (await import('./agents.js')).agentsCommand(homeFrom(opts.home), opts)));
  agents
    .command('reload')
    .description("read the agent config again, without a restart (SIGHUP does the same); a file that does not validate is refused and exits 78")
    .addOption(homeOption())
    .action((opts) => run('agents', async () => (await import('./agents.js')).agentsReloadCommand(homeFrom(opts.home))));
}

export const COMMANDS: CommandTable = { agents: declareAgents };
