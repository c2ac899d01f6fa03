// `turnhost start`, `stop` and `status`: the daemon's lifecycle from the command line.
import type { StoreStatus } from '../../actors/daemon/methods/host.js';
import type { ClusterNode } from '../../persistence/reader.js';
import type { SandboxStatus } from '../../protocol/outbound.js';
import { printTable } from '../table.js';
import { connectDaemon, EXIT_NOT_RUNNING, launchDaemon } from '../daemon-client.js';
import { ensureHome } from '../home.js';
import { waitGone } from '../../persistence/proc.js';

export async function startCommand(homeDir: string, daemonArgs: string[]): Promise<number> {
  const home = ensureHome(homeDir);
  const running = await connectDaemon(home);
  if (running) {
    const status = await running.call<{ supervisor: { pid: number } }>('host.status').finally(() => running.close());
    process.stderr.write(`turnhost start: a daemon is already running in ${home} (pid ${status.supervisor.pid})\n`);
    return 1;
  }
  const launch = await launchDaemon(home, daemonArgs);
  if (!launch.ok) {
    process.stderr.write(`turnhost start: ${launch.alreadyRunning ? `a daemon is already running in ${home}` : launch.message}\n`);
    return 1;
  }
  process.stdout.write(`${launch.pid}\n`);
  return 0;
}

export async function stopCommand(home: string, waitSec: number | undefined): Promise<number> {
  const client = await connectDaemon(home);
  if (client === null) {
    process.stderr.write(`turnhost stop: no daemon is running in ${home}\n`);
    return EXIT_NOT_RUNNING;
  }
  const wait = waitSec ?? 10;
  const status = await client.call<StatusResult>('host.status');
  const report = await client.call<{ finalized: number; retained: number }>('daemon.shutdown', { wait }, (wait + 30) * 1000);
  await client.closed;
  // Returns once the processes are gone, so that a `start` right after never meets the old daemon.
  const pids = [status.supervisor.pid, status.host.pid].filter((pid): pid is number => pid !== null);
  const gone = await Promise.all(pids.map((pid) => waitGone(pid, EXIT_WAIT_MS)));
  if (gone.includes(false)) {
    process.stderr.write(`turnhost stop: the daemon answered, but process ${pids.filter((_, i) => !gone[i]).join(', ')} is still running after ${EXIT_WAIT_MS / 1000} s\n`);
    return 1;
  }
  process.stdout.write(`stopped: ${report.finalized} session(s) finalized, ${report.retained} retained\n`);
  return 0;
}

/** After its shutdown answer the daemon only closes its sockets and files; the host has exited already. */
const EXIT_WAIT_MS = 15_000;

interface StatusResult {
  supervisor: { pid: number; home: string; started_at: string };
  host: { pid: number | null; boot_id: string | null; state: string; restarts: number; last_hb_ms: number | null; active_turns: number; last_error: string | null };
  sessions: { active: number; running: number; retained: number; finalized: number };
  sandbox: SandboxStatus | null;
  store: StoreStatus;
  cluster?: { node_id: string; nodes: ClusterNode[] };
  http?: { url: string };
}

export async function statusCommand(home: string, json: boolean): Promise<number> {
  const client = await connectDaemon(home);
  if (client === null) {
    if (json) process.stdout.write(`${JSON.stringify({ running: false, home })}\n`);
    process.stderr.write(`turnhost status: no daemon is running in ${home}\n`);
    return EXIT_NOT_RUNNING;
  }
  const status = await client.call<StatusResult>('host.status').finally(() => client.close());
  if (json) {
    process.stdout.write(`${JSON.stringify(status)}\n`);
    return 0;
  }
  const { supervisor, host, sessions } = status;
  printTable(['WHAT', 'VALUE'], [
    ['home', supervisor.home],
    ['supervisor pid', supervisor.pid],
    ['host state', host.state],
    ['host pid', host.pid ?? ''],
    ['boot id', host.boot_id ?? ''],
    ['restarts', host.restarts],
    ['last heartbeat', host.last_hb_ms === null ? '' : `${host.last_hb_ms} ms ago`],
    ['active turns', host.active_turns],
    ['sessions', `${sessions.active} active, ${sessions.running} running, ${sessions.retained} retained, ${sessions.finalized} finalized`],
    ['last error', host.last_error ?? ''],
    ['sandbox', sandboxShown(status.sandbox)],
    ['store', status.store.reachable ? status.store.url : `${status.store.url}: unreachable (${status.store.problem ?? 'no answer'})`],
    ...(status.http === undefined ? [] : [['http', status.http.url]]),
    ...(status.cluster === undefined ? [] : clusterRows(status.cluster)),
  ]);
  return 0;
}

/** `required (bubblewrap 0.8.0)`, `off`, `unused (the agent starts no process)`, or nothing before a host said hello. */
export function sandboxShown(sandbox: SandboxStatus | null): string {
  if (sandbox === null) return '';
  if (sandbox.mode === 'unused') return 'unused (the agent starts no process)';
  const shown = sandbox.mechanism === null ? sandbox.mode : `${sandbox.mode} (${sandbox.mechanism})`;
  const exposed = sandbox.exposed ?? [];
  return exposed.length === 0 ? shown : `${shown}; readable by every agent: ${exposed.join(', ')}`;
}

/** This node, then one row a node: its URL, heartbeat age and sessions. */
function clusterRows(cluster: { node_id: string; nodes: ClusterNode[] }): [string, string][] {
  return [
    ['node', cluster.node_id],
    ...cluster.nodes.map((n): [string, string] => [`node ${n.node_id}`, `${n.url ?? '(no url)'}, heartbeat ${n.heartbeat_age_ms} ms ago, ${n.sessions} session(s), agents ${n.catalogue ?? '?'}`]),
  ];
}
