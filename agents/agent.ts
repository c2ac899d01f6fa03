// The agent interface: an agent runs one turn of one session. The host owns history,
// persistence and the wire; an agent only sees its turn.
import type { TurnTrace } from './genai-spans.js';
import type { ChatMessage } from '../protocol/chat.js';
import type { ContentBlock, MessagePart } from '../protocol/content.js';
import type { SandboxStatus, TurnErrorReason } from '../protocol/outbound.js';
import type { TurnUsage } from '../protocol/usage.js';
import type { PlanEntry, ServerRequestMethod } from '../protocol/rpc.js';

export type { ChatMessage, TurnUsage };

/** Per-session settings changed by the slash routes; stored with the session. */
export interface SessionOverrides {
  model?: string;
  personality?: string;
  systemPrompt?: string;
}

export type AgentEvent =
  | { type: 'message.delta'; text: string }
  | { type: 'reasoning.delta'; text: string }
  | { type: 'tool.start'; id: string; name: string; arguments?: string; title?: string }
  | { type: 'tool.complete'; id: string; ok: boolean; summary?: string; content?: MessagePart[] }
  | { type: 'tool.update'; id: string; content: MessagePart[] }
  | { type: 'status.update'; kind: string; text: string; entries?: PlanEntry[] }
  | { type: 'error'; message: string };

export interface AskOptions {
  /** How long the question stays open; the host's default is 600 s. */
  timeoutMs?: number;
}

export interface TurnContext {
  readonly sid: string;
  readonly turnId: string;
  /** The prompt's text form: its text, and a line for each block beyond text (PROTOCOL.md §2.4). */
  readonly prompt: string;
  /** The prompt's blocks when it carries more than text; empty for a text prompt. */
  readonly content: readonly ContentBlock[];
  /** A blob's bytes (`sha256:…`), read from the store when asked. */
  blob(ref: string): Promise<Buffer>;
  /** Keeps bytes the agent sends back (a guest's image) once in the store, named by this session: the block naming them. */
  keepBlob(type: 'image' | 'audio', mimeType: string, bytes: Buffer): Promise<ContentBlock>;
  /** The session's history before this turn's prompt. */
  readonly history: readonly ChatMessage[];
  readonly overrides: Readonly<SessionOverrides>;
  readonly cwd: string | null;
  /** The id a guest agent gave this session (AGENT.md §6), as stored; null until one was kept. */
  readonly agentSessionId: string | null;
  /** Aborted when the turn is interrupted; an agent should stop promptly. */
  readonly signal: AbortSignal;
  /** The turn's span (PROTOCOL.md §5.8): the parent of the agent's model and tool calls' spans (agents/genai-spans.ts). */
  readonly trace: TurnTrace;
  /** Streams an event to the session's clients. */
  emit(event: AgentEvent): void;
  /** Adds a message (a tool call, an intermediate reply) to the history before the final reply. */
  append(message: ChatMessage): void;
  /**
   * Asks the session's clients a question (a server request). Resolves with the client's
   * result object, or null when declined, cancelled or timed out.
   */
  ask(method: ServerRequestMethod, params: Record<string, unknown>, options?: AskOptions): Promise<unknown>;
  /**
   * Commits what the agent has appended so far, so that a crash keeps it (a tool call before it
   * runs, say); otherwise appended messages are committed with the turn's end.
   */
  save(): Promise<void>;
  /**
   * The turn's usage so far, and its model (PROTOCOL.md §5.7): kept with the turn, stored with its
   * next save and its end, so a turn that fails or is lost keeps what was known. A result's usage replaces it.
   */
  reportUsage(usage: TurnUsage, model?: string): void;
  /** Stores the guest agent's id for this session, committed before it resolves (AGENT.md §6). */
  keepAgentSession(agentSessionId: string): Promise<void>;
  /**
   * For a fork with no guest session of its own yet: its source and the source's guest session,
   * when the fork was made at the source's last turn and the source has not moved since (its
   * memory is the fork's, PROTOCOL.md §2.2); null otherwise. Read from the store when asked.
   */
  forkOrigin(): Promise<{ sid: string; agentSessionId: string } | null>;
  /**
   * Whose workspace the session works in when it names no folder (AGENT.md §7): its owner's
   * (PROTOCOL.md §5.6); `flat` for a session stored before workspaces belonged to people, which
   * keeps `<root>/<sid>`. Read from the store when asked.
   */
  workspace(): Promise<{ person: string; flat: boolean }>;
  /**
   * Replaces the history before this turn's prompt with `summary` (a compression during the
   * turn): committed, and the session gets a new session_key. Rejects when it could not be stored.
   */
  compressHistory(summary: ChatMessage[]): Promise<void>;
  /**
   * The texts steered into this turn since the last call, in order (PROTOCOL.md §2.1); each is
   * stored as a user message at this point of the turn. Texts never taken go to the head of the
   * session's queue when the turn ends.
   */
  takeSteering(): string[];
  /** Resolves once a steered text is waiting, after `ms`, or when the turn is interrupted. */
  steeringArrival(ms: number): Promise<void>;
}

export interface TurnResult {
  /** The assistant's reply: added to the history as the turn's last message. */
  reply: string;
  /** The model that answered, and the turn's usage: stored with the turn and sent on turn.end. */
  model?: string;
  usage?: TurnUsage;
  /** Set when the reply was cut by the model's token limit: sent on turn.end (AGENT.md §4). */
  finishReason?: 'length';
  /** What the reply holds beyond its text (a guest's images, PROTOCOL.md §2.4): the reply message's parts. */
  parts?: MessagePart[];
  /** Set when the agent ended the turn as cancelled of its own accord (a guest's `cancelled`, AGENT.md §6): it ends interrupted, as an interrupt's would. */
  interrupted?: true;
}

/** The session a compress route runs for. */
export interface SessionView {
  readonly sid: string;
  readonly overrides: Readonly<SessionOverrides>;
}

export type AgentFailureReason = Extract<TurnErrorReason, 'auth' | 'upstream' | 'stalled' | 'resources' | 'agent' | 'invalid'>;

/** A turn failure whose reason a client can act on (AGENT.md §4); any other throw is an `exception`. */
export class AgentFailure extends Error {
  constructor(
    readonly reason: AgentFailureReason,
    message: string,
  ) {
    super(message);
  }
}

export interface Agent {
  readonly name: string;
  /** True when the agent takes steered texts during a turn; otherwise a steer becomes the queue's head. */
  readonly steerable?: boolean;
  runTurn(turn: TurnContext): Promise<TurnResult>;
  /** Summarizes a history for the compress routes; the host has a default when absent. */
  compress?(history: readonly ChatMessage[], focusTopic: string | null, session: SessionView): ChatMessage[] | Promise<ChatMessage[]>;
  /** Reloads the agent's tools (the `reload.mcp` route); what it returns is the route's result. */
  reloadTools?(): unknown;
  /** Why the agent cannot serve a control route (a guest keeps its own model and context), or null. */
  refusesRoute?(route: string): string | null;
  /** A reason to refuse a session's new overrides (an unknown personality, say), or null. */
  checkOverrides?(overrides: Readonly<SessionOverrides>): string | null;
  /** Called once when the host stops, or once a retired agent's last turn ended: end its own processes and connections. */
  close?(): Promise<void>;
  /**
   * Its definition changed or left the catalogue at a reload (AGENT.md §8): no new turn will come.
   * What it keeps live for idle sessions may go now (a guest agent releases its idle guests).
   */
  retire?(): void;
  /** Sessions it holds live now (a guest agent's live guest sessions), for `agents.list`. */
  liveSessions?(): number;
  /**
   * The session was deleted (PROTOCOL.md §2.3): end what is live for it, and remove what the agent
   * keeps of it on this machine (a guest's home; the workspace turnhost made for a session that named
   * no folder, never one a person named). `place`: its folder as stored, and whose workspace it is in.
   */
  forget?(sid: string, place: { cwd: string | null; person: string; flat: boolean }): Promise<void>;
  /** How the processes the agent starts are confined (AGENT.md §7); absent: it starts none. */
  readonly sandbox?: SandboxStatus;
}

export function isAgent(value: unknown): value is Agent {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Agent).runTurn === 'function' &&
    typeof (value as Agent).name === 'string'
  );
}

/** The default summary: keep the last `keep` messages behind one system message saying what was replaced. */
export function keepRecent(history: readonly ChatMessage[], focusTopic: string | null, keep = 4): ChatMessage[] {
  const kept = history.slice(-keep);
  const replaced = history.length - kept.length;
  const focus = focusTopic ? ` (focus: ${focusTopic})` : '';
  return [{ role: 'system', content: `[compressed ${replaced} earlier messages${focus}]` }, ...kept];
}
