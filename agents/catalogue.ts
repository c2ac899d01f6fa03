// The agents one host runs (AGENT.md §8): the catalogue's definitions, each made into an agent at
// its first use (a catalogue of ten costs nothing until a session uses one), asked for by the name
// a session stores. A reload swaps the catalogue whole, as one value, between turns: an agent made
// from a definition that changed or left is retired (its idle guests released now, the others as
// their turns end, then it is closed once no turn of it runs); the next turn of its sessions makes
// the new one.
import { AgentFailure, type Agent } from './agent.js';
import { AGENT_NAME, catalogueEnvironment, type AgentDefinition, type CatalogueConfig, type CheckedCatalogue } from './catalogue-config.js';
import { checkedCatalogue, loadAgent, type AgentSetup } from './loader.js';
import type { ConfigSource } from './config-file.js';
import type { SandboxStatus } from '../protocol/outbound.js';
import { GuestSlots } from './acp/guest-slots.js';

export { AGENT_NAME };

/** What a host gives every agent it makes, and where its catalogue is read from again at a reload. */
export interface CatalogueSetup extends Pick<AgentSetup, 'log' | 'homes'> {
  /** `--agent`: the one agent of a file without `agents`, or the default of a catalogue. */
  spec: string | undefined;
  source: ConfigSource;
  /** After a reload: every value its agents must never let reach a log (the host's log redacts them). */
  onSecrets?: (secrets: string[]) => void;
}

/** What a host says of its catalogue: `agents.list`'s answer before the caller's rights filter it. */
export interface CatalogueView {
  default: string;
  digest: string;
  agents: AgentListing[];
}

/** A session's agent is not in this host's catalogue: its turns end with reason `agent`. */
export class AgentMissing extends AgentFailure {
  constructor(name: string, nodeId: string | null) {
    super('agent', nodeId === null ? `agent ${name} is not in this daemon's catalogue` : `agent ${name} is not in the catalogue of node ${nodeId}`);
  }
}

/** One agent as `agents.list` shows it (AGENT.md §8). */
export interface AgentListing {
  name: string;
  label: string;
  description: string;
  kind: string;
  models?: string[];
  members: boolean;
  sandbox: { mode: SandboxStatus['mode'] };
  live_sessions: number;
}

interface Made {
  definition: AgentDefinition;
  agent: Promise<Agent>;
  /** The agent once made; null while it is being made (or could not be). */
  ready: Agent | null;
  running: number;
  retired: boolean;
}

export class AgentCatalogue {
  private readonly made = new Map<string, Made>();
  private readonly retiring = new Set<Made>();
  private readonly slots: GuestSlots;

  private config: CatalogueConfig;
  /** bubblewrap's name and version, probed when an agent needs it; null otherwise. */
  private mechanism: string | null;

  /** `checked`: the catalogue the config gives, validated whole (loader.ts, checkedCatalogue). */
  constructor(
    checked: CheckedCatalogue,
    private setup: CatalogueSetup,
    private readonly nodeId: string | null,
  ) {
    this.config = checked.catalogue;
    this.mechanism = checked.mechanism;
    this.slots = new GuestSlots(this.config.maxLiveGuests);
  }

  /**
   * `turnhost agents reload` (AGENT.md §8): the file read and validated again; invalid, it throws
   * AgentLoadError and the old catalogue stays; valid, it is the catalogue from now on. `env`: the
   * variables its agents need that this host was not started with (the daemon passes them).
   */
  async reread(env: Readonly<Record<string, string>>): Promise<CatalogueView> {
    const source = { ...this.setup.source, env: { ...this.setup.source.env, ...env } };
    const { catalogue, mechanism } = await checkedCatalogue(this.setup.spec, source);
    this.setup = { ...this.setup, source };
    this.mechanism = mechanism ?? this.mechanism;
    this.reload(catalogue);
    this.setup.onSecrets?.(catalogueEnvironment(catalogue).secrets);
    return this.view();
  }

  view(): CatalogueView {
    return { default: this.defaultName, digest: this.digest, agents: this.listing() };
  }

  /** A catalogue of one agent made elsewhere (a host run in a test's own process): nothing is loaded. */
  static of(agent: Agent, log: CatalogueSetup['log']): AgentCatalogue {
    const definition: AgentDefinition = {
      name: agent.name,
      kind: agent.name,
      label: agent.name,
      description: '',
      members: true,
      models: null,
      homeTemplate: null,
      source: { home: '', env: {} },
      sandbox: { startsProcesses: agent.sandbox !== undefined && agent.sandbox.mode !== 'unused', mode: agent.sandbox?.mode === 'off' ? 'off' : 'required' },
      environment: { names: [], secrets: [] },
      digest: 'given',
    };
    const config: CatalogueConfig = { file: '', text: null, isCatalogue: false, defaultAgent: agent.name, definitions: new Map([[agent.name, definition]]), maxLiveGuests: 16, digest: 'given' };
    const catalogue = new AgentCatalogue({ catalogue: config, mechanism: agent.sandbox?.mechanism ?? null }, { log, homes: () => null, spec: undefined, source: definition.source }, null);
    catalogue.made.set(agent.name, { definition, agent: Promise.resolve(agent), ready: agent, running: 0, retired: false });
    return catalogue;
  }

  get defaultName(): string {
    return this.config.defaultAgent;
  }

  get digest(): string {
    return this.config.digest;
  }

  /** The file has `agents` (AGENT.md §8); else it is the one agent `--agent` names. */
  get isCatalogue(): boolean {
    return this.config.isCatalogue;
  }

  has(name: string): boolean {
    return this.config.definitions.has(name);
  }

  /** The agent of `name` if it is made and ready; null otherwise (a property an unmade agent cannot have yet). */
  peek(name: string): Agent | null {
    return this.made.get(name)?.ready ?? null;
  }

  /**
   * The agent that runs a turn of a session of `name`, made now at its first use; `done` must be
   * called when the turn ends. Throws AgentMissing when the catalogue has no such agent.
   */
  async lease(name: string): Promise<{ agent: Agent; done: () => void }> {
    const made = this.making(name);
    made.running++;
    try {
      const agent = await made.agent;
      return { agent, done: () => this.turnDone(made) };
    } catch (err) {
      this.turnDone(made);
      this.setup.log.warn({ err, agent: name }, 'an agent of the catalogue could not be made');
      throw new AgentFailure('agent', `agent ${name} could not be made: ${(err as Error).message}`);
    }
  }

  /** The agent of `name`, made now if need be, for what is not a turn (a route, a reload of its tools). */
  async agent(name: string): Promise<Agent> {
    return this.making(name).agent;
  }

  /** Swaps the catalogue; agents made from a definition that changed or left are retired. */
  private reload(next: CatalogueConfig): void {
    this.config = next;
    this.slots.max = next.maxLiveGuests;
    for (const [name, made] of this.made) {
      if (next.definitions.get(name)?.digest === made.definition.digest) continue;
      this.made.delete(name);
      made.retired = true;
      this.retiring.add(made);
      made.ready?.retire?.();
      this.closeIfDone(made);
    }
  }

  /** The agents the catalogue offers; `mayChoose` filters them (a member sees those open to members). */
  listing(mayChoose: (definition: AgentDefinition) => boolean = () => true): AgentListing[] {
    return [...this.config.definitions.values()].filter(mayChoose).map((d) => {
      const made = this.made.get(d.name);
      return {
        name: d.name,
        label: d.label,
        description: d.description,
        kind: d.kind,
        ...(d.models === null ? {} : { models: d.models }),
        members: d.members,
        sandbox: { mode: d.sandbox.startsProcesses ? d.sandbox.mode : 'unused' },
        live_sessions: made === undefined ? 0 : (made.ready?.liveSessions?.() ?? made.running),
      };
    });
  }

  definition(name: string): AgentDefinition | undefined {
    return this.config.definitions.get(name);
  }

  /** How the catalogue's processes are confined (AGENT.md §7): `required` when any agent that starts processes is. */
  get sandbox(): SandboxStatus {
    const starting = [...this.config.definitions.values()].filter((d) => d.sandbox.startsProcesses);
    if (starting.length === 0) return { mode: 'unused', mechanism: null };
    if (starting.some((d) => d.sandbox.mode === 'required')) return { mode: 'required', mechanism: this.mechanism };
    return { mode: 'off', mechanism: null };
  }

  async close(): Promise<void> {
    const all = [...this.made.values(), ...this.retiring];
    this.made.clear();
    this.retiring.clear();
    await Promise.all(all.map(async (made) => (await made.agent.catch(() => null))?.close?.()));
  }

  private making(name: string): Made {
    const existing = this.made.get(name);
    if (existing !== undefined) return existing;
    const definition = this.config.definitions.get(name);
    if (definition === undefined) throw new AgentMissing(name, this.nodeId);
    const agent = loadAgent(definition.kind, { log: this.setup.log, homes: this.setup.homes, ...definition.source, env: this.setup.source.env, slots: this.slots, homeTemplate: definition.homeTemplate });
    const made: Made = { definition, agent, ready: null, running: 0, retired: false };
    void agent.then(
      (ready) => {
        made.ready = ready;
      },
      // A definition that cannot be made is tried again at its next use.
      () => {
        if (this.made.get(name) === made) this.made.delete(name);
      },
    );
    this.made.set(name, made);
    return made;
  }

  private turnDone(made: Made): void {
    made.running--;
    this.closeIfDone(made);
  }

  private closeIfDone(made: Made): void {
    if (!made.retired || made.running > 0) return;
    this.retiring.delete(made);
    void made.agent.then((agent) => agent.close?.()).catch(() => {});
  }
}
