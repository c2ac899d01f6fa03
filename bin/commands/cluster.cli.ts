// `turnhost cluster` and `cluster rotate-secret` declared (docs/CLUSTER.md); the bodies are
// cluster.ts.
import type { Command } from 'commander';
import { homeFrom } from '../../protocol/home-paths.js';
import { homeOption, storeOption } from '../cli-options.js';
import { run } from '../run-command.js';
import type { CommandTable } from '../command-table.js';

/** The nodes, and their secret. */
function declareCluster(program: Command): void {
  const cluster = program
    .command('cluster')
    .description("the nodes that share one PostgreSQL (docs/CLUSTER.md), as the running daemon's node sees them, with each node's catalogue of agents")
    .addOption(homeOption())
    .option('--json', 'print one JSON array')
    .action((opts) => run('cluster', async () => (await import('./cluster.js')).nodesCommand(homeFrom(opts.home), opts.json === true)));
  cluster
    .command('rotate-secret')
    .description('replace the secret the nodes prove to each other; every node takes the new one within 5 s')
    .addOption(storeOption())
    .action((opts) => run('cluster', async () => (await import('./cluster.js')).rotateSecretCommand(opts.store)));
}

export const COMMANDS: CommandTable = { cluster: declareCluster };
