// `npm run bench -- <name>…`: host, shutdown, daemon, recovery, agent, agents, queue, edge, store, cluster, protocols, guests, page, people, webhooks, branches, ledger, life, content, or all.
import { benchAgent } from './agent.js';
import { benchAgents } from './agents.js';
import { benchBranches } from './branches.js';
import { benchCluster } from './cluster.js';
import { benchDaemon } from './daemon.js';
import { benchEdge } from './edge.js';
import { benchGuests } from './guests.js';
import { benchHost } from './host.js';
import { benchLedger } from './ledger.js';
import { benchLife } from './life.js';
import { benchContent } from './content.js';
import { benchPage } from './page.js';
import { benchPeople } from './people.js';
import { benchProtocols } from './protocols.js';
import { benchQueue } from './queue.js';
import { benchRecovery } from './recovery.js';
import { benchShutdown } from './shutdown.js';
import { benchStore } from './store.js';
import { benchWebhooks } from './webhooks.js';

const BENCHES: Record<string, () => Promise<void>> = {
  host: benchHost,
  shutdown: benchShutdown,
  daemon: benchDaemon,
  recovery: benchRecovery,
  agent: benchAgent,
  agents: benchAgents,
  queue: benchQueue,
  edge: benchEdge,
  store: benchStore,
  cluster: benchCluster,
  protocols: benchProtocols,
  guests: benchGuests,
  page: benchPage,
  people: benchPeople,
  webhooks: benchWebhooks,
  branches: benchBranches,
  ledger: benchLedger,
  life: benchLife,
  content: benchContent,
};

const names = process.argv.slice(2);
const selected = names.length === 0 || names.includes('all') ? Object.keys(BENCHES) : names;
for (const name of selected) {
  const bench = BENCHES[name];
  if (bench === undefined) {
    process.stderr.write(`unknown benchmark "${name}"; choose from: ${Object.keys(BENCHES).join(', ')}, all\n`);
    process.exit(2);
  }
  process.stdout.write(`\n== bench ${name} ==\n`);
  await bench();
}
