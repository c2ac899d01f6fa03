// `turnhost agents [--json]` and `turnhost agents reload` (AGENT.md §8), through the running daemon:
// the agents a session may be made with, and the agent config read again without a restart. A
// file that does not validate is refused with the line a start would exit 78 with, and exits 78.
import type { AgentListing, CatalogueView } from '../../agents/catalogue.js';
import { ErrorCodes, RpcError } from '../../protocol/client-rpc.js';
import { EXIT_CONFIG } from '../../agents/loader-error.js';
import { withDaemon } from '../daemon-client.js';
import { printTable } from '../table.js';

export async function agentsCommand(home: string, options: { json?: boolean }): Promise<number> {
  return withDaemon(home, 'agents', async (client) => {
    const view = await client.call<CatalogueView>('agents.list', {});
    if (options.json) process.stdout.write(`${JSON.stringify(view)}\n`);
    else printAgents(view);
    return 0;
  });
}

export async function agentsReloadCommand(home: string): Promise<number> {
  return withDaemon(home, 'agents reload', async (client) => {
    try {
      const view = await client.call<CatalogueView>('agents.reload', {});
      process.stdout.write(`reloaded: ${view.agents.map((agent) => agent.name).join(', ')} (default ${view.default})\n`);
      return 0;
    } catch (err) {
      if (!(err instanceof RpcError) || err.code !== ErrorCodes.invalidParams) throw err;
      process.stderr.write(`turnhost agents reload: ${err.message}; the daemon keeps its agents\n`);
      return EXIT_CONFIG;
    }
  });
}

function printAgents(view: CatalogueView): void {
  printTable(
    ['NAME', 'KIND', 'LIVE', 'SANDBOX', 'MODELS', 'DESCRIPTION'],
    view.agents.map((agent: AgentListing) => [
      agent.name === view.default ? `${agent.name} (default)` : agent.name,
      agent.kind,
      agent.live_sessions,
      agent.sandbox.mode,
      agent.models?.join(', ') ?? '',
      agent.label === agent.name ? agent.description : `${agent.label}: ${agent.description}`,
    ]),
  );
}
