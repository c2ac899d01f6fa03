// The catalogue of agents as a caller may use it (AGENT.md §8): list it, reload it, and hold a
// member's model to their agent's `models`.
import type { CatalogueView } from '../../../agents/catalogue.js';
import { ErrorCodes, RpcError } from '../../../protocol/client-rpc.js';
import type { ClientContext } from '../client-context.js';
import { callHost } from './host-calls.js';
import type { MethodTable } from './method-table.js';

/** A member's `slash.model` is held to the session's agent's `models` (AGENT.md §8). */
export async function checkModel(ctx: ClientContext, sid: string, model: string): Promise<void> {
  if (ctx.identity.admin) return;
  const agent = (await (await ctx.reader())?.session(sid))?.agent ?? ctx.agents.config.defaultAgent;
  const refusal = ctx.agents.modelRefusal(ctx.identity, agent, model);
  if (refusal !== null) throw new RpcError(ErrorCodes.invalidParams, `invalid params: ${refusal}`);
}

/** The catalogue as the caller may use it: a member sees the agents open to members, and the default they would get. */
function agentsFor(view: CatalogueView, ctx: ClientContext): CatalogueView {
  return { ...view, default: ctx.agents.defaultFor(ctx.identity) ?? '', agents: view.agents.filter((agent) => ctx.agents.mayUse(ctx.identity, agent)) };
}

/** The agents a session may be made with. */
export const AGENT_METHODS: MethodTable = {

  /** The agents the caller may make a session with (AGENT.md §8), with how many sessions each holds live. */
  async 'agents.list'(_p, ctx) {
    return agentsFor((await callHost(ctx, { op: 'agents', reload: false })) as CatalogueView, ctx);
  },


  /** `turnhost agents reload` (admins): the file read and validated again, by the daemon and its host. */
  async 'agents.reload'(_p, ctx) {
    return agentsFor(await ctx.reloadAgents(), ctx);
  },
};
