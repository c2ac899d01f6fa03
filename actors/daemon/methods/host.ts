// The daemon and its host as a whole (PROTOCOL.md §2): their status with the store's and the
// cluster's, a restart of the host after a crash loop, and the daemon's stop.
import type { ClusterNode } from '../../../persistence/reader.js';
import type { SessionStatus } from '../../../persistence/store.js';
import { within } from '../../../agents/sandbox/bubblewrap.js';
import { ask, SECOND_MS, type Ref } from '../../runtime.js';
import type { StopReport, SupervisorMsg } from '../supervisor-messages.js';
import type { ClientContext } from '../client-context.js';
import { CALL_TIMEOUT_MS, hostStatus } from './host-calls.js';
import type { MethodTable } from './method-table.js';

const STOP_TIMEOUT_MS = 5 * 60 * SECOND_MS;

const DEFAULT_STOP_WAIT_SEC = 10;

/** What `host.status` says of the store. */
export interface StoreStatus {
  url: string;
  reachable: boolean;
  problem?: string;
}

/**
 * The sessions by status, and whether the store answers: an unreachable one is named, not an
 * error. Reachable means this node can write it, as its host's last heartbeat says, not only read.
 */
async function storeStatus(ctx: ClientContext, writeProblem: string | null): Promise<{ counts: Record<SessionStatus, number>; store: StoreStatus }> {
  const none = { active: 0, retained: 0, finalized: 0 };
  try {
    const reader = await ctx.reader();
    const counts = (await reader?.statusCounts()) ?? none;
    return { counts, store: { url: ctx.storeShown, reachable: writeProblem === null, ...(writeProblem === null ? {} : { problem: writeProblem }) } };
  } catch (err) {
    return { counts: none, store: { url: ctx.storeShown, reachable: false, problem: (err as Error).message } };
  }
}

/** The cluster's nodes as the store has them; none while it cannot be read (`store` says why). */
async function clusterNodes(ctx: ClientContext): Promise<ClusterNode[]> {
  try {
    return (await (await ctx.reader())?.nodes()) ?? [];
  } catch {
    return [];
  }
}

/**
 * The folders admins gave sessions that lie outside every hidden place (AGENT.md §7): visible
 * read-only to every other session's agent, as all of `/` is, so `status` names them.
 */
async function exposedFolders(ctx: ClientContext): Promise<string[]> {
  const folders = (await (await ctx.reader())?.sessionFolders()) ?? [];
  return folders.filter((folder) => !ctx.hiddenPlaces.some((place) => within(folder, place)));
}

/** The daemon's and its host's own. */
export const HOST_METHODS: MethodTable = {

  async 'host.status'(_p, ctx) {
    const status = await hostStatus(ctx);
    const { counts, store } = await storeStatus(ctx, status.host.store_problem);
    const url = ctx.edgeUrl();
    return {
      supervisor: status.supervisor,
      host: status.host,
      sandbox: status.sandbox === null || status.sandbox.mode !== 'required' ? status.sandbox : { ...status.sandbox, mechanism: status.sandbox.mechanism ?? (await ctx.sandboxMechanism()), exposed: await exposedFolders(ctx) },
      store,
      ...(ctx.nodeId === null ? {} : { cluster: { node_id: ctx.nodeId, nodes: await clusterNodes(ctx) } }),
      sessions: { active: counts.active, running: status.running_sids.length, retained: counts.retained, finalized: counts.finalized },
      ...(url === null ? {} : { http: { url } }),
      you: { user: ctx.identity.user, admin: ctx.identity.admin },
    };
  },


  'host.restart'(_p, ctx) {
    return ask(ctx.supervisor, (replyTo: Ref<{ state: string }>): SupervisorMsg => ({ kind: 'restart', replyTo }), CALL_TIMEOUT_MS);
  },


  'daemon.shutdown'(p, ctx) {
    const waitSec = p.optionalNumber('wait', 0) ?? DEFAULT_STOP_WAIT_SEC;
    return ask(ctx.supervisor, (replyTo: Ref<StopReport>): SupervisorMsg => ({ kind: 'stop', waitSec, replyTo }), STOP_TIMEOUT_MS);
  },
};
