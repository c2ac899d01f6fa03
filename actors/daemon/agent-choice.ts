// Which agent a session is made with, and who may choose it (AGENT.md §8): the daemon's copy of
// the catalogue, read from the same file as its host's and swapped at a reload. A member chooses
// among the agents open to members (`members`, default true) and, for an `openai` agent, among its
// `models`; an admin (and the home's owner) chooses any agent and any model.
import type { AgentDefinition, CatalogueConfig, CheckedCatalogue } from '../../agents/catalogue-config.js';
import type { AgentListing } from '../../agents/catalogue.js';
import { ErrorCodes, RpcError } from '../../protocol/client-rpc.js';
import type { Identity } from './identity.js';

/** What a new session is made with. */
export interface Choice {
  agent: string;
  model?: string;
}

export class AgentChoices {
  constructor(private current: CheckedCatalogue) {}

  get config(): CatalogueConfig {
    return this.current.catalogue;
  }

  /** As validated, for the host the daemon starts next (catalogue-handoff.ts). */
  get checked(): CheckedCatalogue {
    return this.current;
  }

  set(next: CheckedCatalogue): void {
    this.current = next;
  }

  /** The sandbox's try answered (daemon.ts tries it once its first host said hello): bubblewrap's name and version. */
  sandboxTried(mechanism: string): void {
    this.current = { ...this.current, mechanism };
  }

  /** Whether `identity` may make a session with the agent. */
  mayUse(identity: Identity, agent: Pick<AgentDefinition, 'members'> | Pick<AgentListing, 'members'>): boolean {
    return identity.admin || agent.members;
  }

  /**
   * The default a person gets: the catalogue's, or for a member to whom it is closed, the first
   * agent open to members; null when none is.
   */
  defaultFor(identity: Identity): string | null {
    const definitions = [...this.current.catalogue.definitions.values()];
    return definitions.find((d) => d.name === this.current.catalogue.defaultAgent && this.mayUse(identity, d))?.name ?? definitions.find((d) => this.mayUse(identity, d))?.name ?? null;
  }

  /**
   * The agent (and model) `identity` asked for a new session, checked: -32602 for an agent the
   * catalogue lacks (naming its agents) or a member's model outside the agent's `models`, 4003 for
   * an agent a member may not use.
   */
  choose(identity: Identity, asked: string | undefined, model: string | undefined): Choice {
    const name = asked ?? this.defaultFor(identity);
    if (name === null) throw new RpcError(ErrorCodes.forbidden, 'forbidden: no agent of this daemon is open to members');
    const definition = this.current.catalogue.definitions.get(name);
    if (definition === undefined) throw new RpcError(ErrorCodes.invalidParams, `unknown agent ${name} (agents: ${[...this.current.catalogue.definitions.keys()].join(', ')})`);
    if (!this.mayUse(identity, definition)) throw new RpcError(ErrorCodes.forbidden, `forbidden: agent ${name} is not open to members`);
    if (model === undefined) return { agent: name };
    if (definition.models === null) throw new RpcError(ErrorCodes.invalidParams, `invalid params: agent ${name} (${definition.kind}) has no models to pick from`);
    if (!identity.admin && !definition.models.includes(model)) {
      throw new RpcError(ErrorCodes.invalidParams, `invalid params: model ${model} is not one of agent ${name}'s (${definition.models.join(', ')})`);
    }
    return { agent: name, model };
  }

  /** A member's `slash.model` is held to the session's agent's `models` (null: allowed). */
  modelRefusal(identity: Identity, agent: string, model: string): string | null {
    if (identity.admin) return null;
    const models = this.current.catalogue.definitions.get(agent)?.models ?? null;
    if (models === null || models.includes(model)) return null;
    return `model ${model} is not one of agent ${agent}'s (${models.join(', ')})`;
  }
}
