// A live guest session (AGENT.md §6): one guest process holding one ACP session of one turnhost
// session. Made live at a turn: the process started, `initialize`, then `session/load` with the
// stored id when the guest can load; for a fork made at its source's last turn, `session/fork` of
// the source's guest session when the guest can fork (PROTOCOL.md §2.2); else `session/new`. A new
// id is committed before any prompt.
// While a turn runs, the guest's updates and questions go to that turn; at other times (a load
// replaying its transcript) they make nothing.
import {
  client,
  PROTOCOL_VERSION,
  RequestError,
  type CreateElicitationRequest,
  type CreateElicitationResponse,
  type AgentCapabilities,
  type McpServer,
  type PromptCapabilities,
  type RequestPermissionRequest,
  type RequestPermissionResponse,
  type SessionUpdate,
} from '@agentclientprotocol/sdk';
// `session/fork` is unstable in ACP v1: its shapes only; the connection is the stable protocol's.
import type { ForkSessionRequest, ForkSessionResponse, SessionCapabilities } from '@agentclientprotocol/sdk/unstable';
import { AgentFailure, type TurnContext } from '../agent.js';
import { packageVersion } from '../../protocol/package-version.js';
import type { McpServerConfig } from '../agent-config.js';
import type { GuestConfig } from './guest-config.js';
import { EXIT_WAIT_MS, GuestProcess, untilAborted, type GuestLog } from './guest-process.js';
import type { AgentSandbox } from '../sandbox/sandbox.js';
import { GuestTerminals } from './guest-terminals.js';

/** ACP's "authentication required" (AGENT.md §6: a turn error of reason `auth`). */
const AUTH_REQUIRED = -32000;

/** Where a running turn hears from its guest. */
export interface TurnSink {
  update(update: SessionUpdate): void;
  permission(request: RequestPermissionRequest, signal: AbortSignal): Promise<RequestPermissionResponse>;
  elicitation(request: CreateElicitationRequest, signal: AbortSignal): Promise<CreateElicitationResponse>;
  /** A terminal turnhost runs for the guest wrote or ended. */
  terminalChanged(terminalId: string): void;
}

export class LiveSession {
  /** The running turn's sink; null between turns. */
  sink: TurnSink | null = null;
  busy = false;
  /** When a turn last took it (ms): the least recently used across agents goes first (guest-slots.ts). */
  usedAt = Date.now();
  /** How many history messages the guest has seen: a session changed elsewhere (another node's turns) is loaded again. */
  knownHistory = 0;
  idleTimer: NodeJS.Timeout | null = null;

  private constructor(
    readonly sid: string,
    readonly process: GuestProcess,
    readonly sessionId: string,
    private readonly sandbox: AgentSandbox,
    /** Its working folder: where the files of its prompts are written (guest-prompt.ts). */
    readonly cwd: string,
    /** What its prompts may hold beyond text and links, as the guest declared at initialize. */
    readonly promptCapabilities: PromptCapabilities | null,
    /** The commands turnhost runs for it (ACP's terminal methods). */
    readonly terminals: GuestTerminals,
  ) {}

  get healthy(): boolean {
    return this.process.alive;
  }

  /**
   * Makes a session live for its turn, in its sandbox; throws AgentFailure (the process ended) when
   * the guest cannot. `origin`: the source's guest session a fork with none of its own may fork.
   */
  static async open(config: GuestConfig, turn: TurnContext, cwd: string, log: GuestLog, sandbox: AgentSandbox, origin: ForkOrigin | null): Promise<LiveSession> {
    let live: LiveSession | null = null;
    const terminals = new GuestTerminals(sandbox, config.env, (terminalId) => live?.sink?.terminalChanged(terminalId));
    const app = client({ name: 'turnhost' })
      .onNotification('session/update', ({ params }) => {
        if (params.sessionId === live?.sessionId) live.sink?.update(params.update);
      })
      .onRequest('terminal/create', ({ params }) => terminals.create(params))
      .onRequest('terminal/output', ({ params }) => terminals.output(params.terminalId))
      .onRequest('terminal/wait_for_exit', ({ params, signal }) => terminals.waitForExit(params.terminalId, signal))
      .onRequest('terminal/kill', ({ params }) => terminals.kill(params.terminalId))
      .onRequest('terminal/release', ({ params }) => terminals.release(params.terminalId))
      .onRequest('session/request_permission', ({ params, signal }) => live?.sink?.permission(params, signal) ?? { outcome: { outcome: 'cancelled' } })
      .onRequest('elicitation/create', ({ params, signal }) => live?.sink?.elicitation(params, signal) ?? ({ action: 'decline' } as CreateElicitationResponse));
    let guest: GuestProcess;
    try {
      guest = GuestProcess.start(config, cwd, app, log, turn.sid, sandbox);
    } catch (err) {
      await sandbox.close();
      throw err;
    }
    const deadline = AbortSignal.timeout(config.startTimeoutMs);
    try {
      const started = await withinStart(config, guest, deadline, () => startSession(config, guest, turn, cwd, origin));
      live = new LiveSession(turn.sid, guest, started.sessionId, sandbox, cwd, started.promptCapabilities, terminals);
      return live;
    } catch (err) {
      await terminals.close();
      await guest.end();
      await sandbox.close();
      throw err;
    }
  }

  async end(): Promise<void> {
    if (this.idleTimer !== null) clearTimeout(this.idleTimer);
    await this.terminals.close();
    await this.process.end();
    await this.sandbox.close();
  }
}

export type ForkOrigin = NonNullable<Awaited<ReturnType<TurnContext['forkOrigin']>>>;

/** initialize, then load, fork or new: the session id the prompt goes to, and what a prompt may hold. */
async function startSession(
  config: GuestConfig,
  guest: GuestProcess,
  turn: TurnContext,
  cwd: string,
  origin: ForkOrigin | null,
): Promise<{ sessionId: string; promptCapabilities: PromptCapabilities | null }> {
  const agent = guest.connection.agent;
  const init = await agent.request('initialize', {
    protocolVersion: PROTOCOL_VERSION,
    // Terminals run in the session's sandbox (guest-terminals.ts); no fs: a guest reads its folder
    // itself. Elicitations are asked as clarify questions.
    clientCapabilities: { terminal: true, elicitation: { form: {} } },
    clientInfo: { name: 'turnhost', version: packageVersion() },
  });
  const method = envAuthMethod(init.authMethods, config.env);
  if (method !== null) await agent.request('authenticate', { methodId: method });
  const promptCapabilities = init.agentCapabilities?.promptCapabilities ?? null;
  return { sessionId: await openSession(config, agent, turn, cwd, origin, init.agentCapabilities), promptCapabilities };
}

/** load, fork or new, as the guest can: the session id. */
async function openSession(
  config: GuestConfig,
  agent: GuestProcess['connection']['agent'],
  turn: TurnContext,
  cwd: string,
  origin: ForkOrigin | null,
  capabilities: AgentCapabilities | null | undefined,
): Promise<string> {
  const mcpServers = stdioServers(config.mcpServers);
  const stored = turn.agentSessionId;
  if (stored !== null && capabilities?.loadSession === true) {
    try {
      await agent.request('session/load', { sessionId: stored, cwd, mcpServers });
      return stored;
    } catch (err) {
      if (!(err instanceof RequestError)) throw err;
      // Its memory is not where this guest keeps it (another node's folder, a cleared one): start anew, and say so.
      turn.emit({ type: 'status.update', kind: 'context', text: `the agent could not load its session (${err.message}): it starts without its memory of the ${turn.history.length} earlier messages` });
    }
  } else if (stored === null && origin !== null && canFork(capabilities?.sessionCapabilities)) {
    try {
      const request: ForkSessionRequest = { sessionId: origin.agentSessionId, cwd, mcpServers };
      const forked = await agent.request<ForkSessionResponse>('session/fork', request);
      await turn.keepAgentSession(forked.sessionId);
      return forked.sessionId;
    } catch (err) {
      if (!(err instanceof RequestError)) throw err;
      turn.emit({ type: 'status.update', kind: 'context', text: `the agent could not fork the session of ${origin.sid} (${err.message}): it starts without its memory of the ${turn.history.length} earlier messages` });
    }
  } else if (turn.history.length > 0) {
    turn.emit({ type: 'status.update', kind: 'context', text: `the agent starts without its memory of the ${turn.history.length} earlier messages: ${noMemoryReason(stored, origin)}` });
  }
  let created;
  try {
    created = await agent.request('session/new', { cwd, mcpServers });
  } catch (err) {
    if (err instanceof RequestError && err.code === AUTH_REQUIRED) throw new AgentFailure('auth', `the guest agent ${JSON.stringify(config.command)} needs authentication: ${err.message}`);
    throw err;
  }
  // Committed before the first prompt: a crash after it loads this session, never a lost one.
  await turn.keepAgentSession(created.sessionId);
  return created.sessionId;
}

/** Whether the guest declared `sessionCapabilities.fork` (unstable in ACP v1). */
function canFork(capabilities: SessionCapabilities | null | undefined): boolean {
  return capabilities?.fork !== undefined && capabilities.fork !== null;
}

/** Why a guest that neither loads nor forks starts without the history's memory, for the person who sees it. */
function noMemoryReason(stored: string | null, origin: ForkOrigin | null): string {
  if (stored !== null) return 'it cannot load a session';
  if (origin !== null) return 'it cannot fork a session';
  return 'it has no session of this branch of the conversation (a new session, a fork before its source\'s last turn, or a rewind)';
}

/** The start's steps within start_timeout_s, and a guest that exits or errs during them, as one clear failure. */
async function withinStart<T>(config: GuestConfig, guest: GuestProcess, deadline: AbortSignal, step: () => Promise<T>): Promise<T> {
  const command = JSON.stringify(config.command);
  const timedOut = () => new AgentFailure('upstream', `the guest agent ${command} did not start its session within ${config.startTimeoutMs / 1000} s (initialize, then session/new or session/load)`);
  const exited = () => new AgentFailure('upstream', guest.describeExit());
  try {
    return await untilAborted(untilAborted(step(), deadline, timedOut), guest.gone, exited);
  } catch (err) {
    if (err instanceof AgentFailure) throw err;
    // A closed connection is the guest going: its exit (code, stderr) says more than the closed pipe.
    if (!guest.alive || (guest.connection.signal.aborted && (await guest.exitedWithin(EXIT_WAIT_MS)))) throw exited();
    throw new AgentFailure('upstream', `the guest agent ${command} failed to start its session: ${(err as Error).message}`);
  }
}

/**
 * A guest may offer to authenticate from its environment (Codex: `openai-api-key`, which reads
 * OPENAI_API_KEY): its first such method whose variables the guest has (`pass_env`), or null. A
 * login in a terminal or a browser is not turnhost's to do: the guest must be logged in already.
 */
function envAuthMethod(methods: unknown, env: Readonly<Record<string, string>>): string | null {
  if (!Array.isArray(methods)) return null;
  for (const method of methods as { type?: unknown; id?: unknown; vars?: unknown }[]) {
    if (method?.type !== 'env_var' || typeof method.id !== 'string' || !Array.isArray(method.vars)) continue;
    if ((method.vars as { name?: unknown }[]).every((v) => typeof v?.name === 'string' && env[v.name] !== undefined && env[v.name] !== '')) return method.id;
  }
  return null;
}

/** The config's MCP servers, given to the guest as stdio servers (AGENT.md §6). */
function stdioServers(servers: Readonly<Record<string, McpServerConfig>>): McpServer[] {
  return Object.entries(servers).map(([name, server]) => ({
    name,
    command: server.command,
    args: server.args,
    env: Object.entries(server.env).map(([key, value]) => ({ name: key, value })),
  }));
}
