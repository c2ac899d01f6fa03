// What a client method runs with (PROTOCOL.md §2): the daemon's actors and stores shared by every
// client of a door, and what one client told the daemon so far. Every door makes one per client.
import type { ContentBounds } from '../../protocol/content.js';
import type { Reader } from '../../persistence/reader.js';
import type { People } from '../../persistence/people.js';
import type { SideStore } from '../../persistence/side-store.js';
import type { CatalogueView } from '../../agents/catalogue.js';
import type { Ref } from '../runtime.js';
import type { Cluster } from './peer-links.js';
import type { GatewayMsg, SupervisorMsg } from './supervisor-messages.js';
import type { Identity } from './identity.js';
import type { AgentChoices } from './agent-choice.js';
import type { SessionAccess } from './session-access.js';

export interface ClientContext {
  clientId: number;
  supervisor: Ref<SupervisorMsg>;
  gateway: Ref<GatewayMsg>;
  /** The store's reader, opened on first use; null while the host has made no database yet. */
  reader(): Promise<Reader | null>;
  /** The store as it may be shown (a PostgreSQL URL's password as `***`). */
  storeShown: string;
  /** This node's id, when it is one node of several on the store (PROTOCOL.md §6.2). */
  nodeId: string | null;
  /** As a node, to forward methods on sessions another node owns; null when alone, and on a link from a peer. */
  cluster: Cluster | null;
  /** The connection is another node's link (PROTOCOL.md §6.2): it may call session methods and nothing else. */
  peer?: boolean;
  /** Working folders given at session.create, for that session's turns from this client. */
  cwds: Map<string, string>;
  /** Sessions this client was attached to: the gateway and the supervisor are told once each. */
  attached: Set<string>;
  /** The HTTP edge's address, when the daemon listens (`--listen`). */
  edgeUrl(): string | null;
  /** Who the client is (PROTOCOL.md §5.6): the home's owner on the unix socket. */
  identity: Identity;
  /** `sandbox.workspaces_root` (AGENT.md §7): a member's session works below their own folder of it. */
  workspacesRoot: string;
  /** What a prompt may carry beyond text (PROTOCOL.md §2.4). */
  contentBounds: ContentBounds;
  /** Where every sandbox shows nothing (AGENT.md §7): a session's folder outside them is visible to all agents. */
  hiddenPlaces: readonly string[];
  /** The catalogue of agents (AGENT.md §8): which a new session may be made with, and by whom. */
  agents: AgentChoices;
  /** bubblewrap's name and version as the daemon's own try found it (daemon.ts), once that try answered; null when no agent needs it. */
  sandboxMechanism(): Promise<string | null>;
  /** Reads the agent config again, and the host with it; throws -32602 with the exit-78 line when it does not validate. */
  reloadAgents(): Promise<CatalogueView>;
  /** The store's users and shares, opened on first use. */
  people(): Promise<People | null>;
  /** The store's side connection (people, schedules, the outbox), opened on first use. */
  side(): Promise<SideStore | null>;
  /** Tells the scheduler a schedule was made here: its first fire may be sooner than its sleep. */
  scheduled(): void;
  access: SessionAccess;
  /** One record of `<home>/logs/audit.log` (who did what), never a token. */
  audit(record: AuditRecord): void;
}

export interface AuditRecord {
  user: string;
  action: string;
  session_id?: string;
  detail?: Record<string, unknown>;
}

/** What a door shares with all of its clients. */
export type SharedContext = Omit<ClientContext, 'clientId' | 'cwds' | 'attached'>;

/** A client's own context: its id, and what it told the daemon so far. */
export function clientContext(shared: SharedContext, clientId: number): ClientContext {
  return { ...shared, clientId, cwds: new Map(), attached: new Set() };
}
