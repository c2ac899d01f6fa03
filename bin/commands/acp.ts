// `turnhost acp`: an Agent Client Protocol agent (v1, JSON-RPC over stdin/stdout) that an editor
// starts (PROTOCOL.md §7.2). Everything goes to the daemon (started if none runs) through
// `turnhost/client`, so a turn outlives the editor: the next editor's `session/load` shows it.
// stdout carries ACP and nothing else; what this process has to say goes to stderr.
// `session/new` offers the daemon's agents (and an `openai` agent's models) as session config
// options (AGENT.md §8); the editor may set them until the session's first prompt, when the
// session is made in turnhost with them (`turnhost acp --agent NAME` fixes the agent).
import { randomBytes } from 'node:crypto';
import { Readable, Writable } from 'node:stream';
// The unstable entry: `session/fork` (PROTOCOL.md §2.2) is unstable in ACP v1; the rest is the stable protocol.
import { agent, ndJsonStream, PROTOCOL_VERSION, RequestError, type AgentContext, type ClientCapabilities, type StopReason } from '@agentclientprotocol/sdk/unstable';
import type { TurnhostClient } from '../../client/turnhost-client.js';
import type { SessionEvent } from '../../client/types.js';
import { ErrorCodes, RpcError } from '../../protocol/client-rpc.js';
import { packageVersion } from '../../protocol/package-version.js';
import { connectOrLaunch, waitForHost } from '../daemon-client.js';
import { ensureHome } from '../home.js';
import {
  approvalAnswer,
  approvalPermission,
  clarifyElicitation,
  clarifyFromElicitation,
  clarifyFromPermission,
  clarifyPermission,
  historyUpdates,
  editorPrompt,
  sessionConfigOptions,
  updateOf,
  AGENT_OPTION,
  MODEL_OPTION,
  type SessionChoice,
} from '../../agents/acp/editor-mapping.js';
import { singleAgentName } from '../../agents/catalogue-config.js';

export interface AcpOptions {
  hostArgs: string[];
  /** `--agent`: every session this editor makes runs with it. */
  agent?: string;
}

/** A session `session/new` made that turnhost has not yet: its folder, and what the editor chose. */
interface Draft extends SessionChoice {
  cwd: string;
}

const say = (line: string) => process.stderr.write(`turnhost acp: ${line}\n`);

export async function acpCommand(homeDir: string, options: AcpOptions): Promise<number> {
  const home = ensureHome(homeDir);
  const client = await connectOrLaunch(home, options.hostArgs);
  if (typeof client === 'string') {
    say(client);
    return 1;
  }
  try {
    await waitForHost(() => client.hostStatus());
    const bridge = new AcpBridge(client, options.agent === undefined ? null : singleAgentName(options.agent));
    const connection = bridge.app.connect(ndJsonStream(Writable.toWeb(process.stdout) as WritableStream<Uint8Array>, Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>));
    bridge.answerQuestionsThrough(connection.client);
    await connection.closed;
    return 0;
  } catch (err) {
    say((err as Error).message);
    return 1;
  } finally {
    client.close();
  }
}

class AcpBridge {
  private editorCapabilities: ClientCapabilities = {};
  /** The turn each session's `session/prompt` waits on: what `session/cancel` stops. */
  private readonly running = new Map<string, string>();
  /** Sessions made by `session/new` that wait for their first prompt to be made in turnhost. */
  private readonly drafts = new Map<string, Draft>();

  readonly app = agent({ name: 'turnhost' })
    .onRequest('initialize', ({ params }) => {
      this.editorCapabilities = params.clientCapabilities ?? {};
      return {
        protocolVersion: PROTOCOL_VERSION,
        // Images: turnhost stores them and hands them to the session's agent, which may refuse them by name (PROTOCOL.md §2.4).
        agentCapabilities: { loadSession: true, promptCapabilities: { embeddedContext: true, image: true }, sessionCapabilities: { fork: {} } },
        agentInfo: { name: 'turnhost', version: packageVersion() },
      };
    })
    .onRequest('session/new', async ({ params }) => {
      const catalogue = await this.client.agents();
      const agent = this.fixedAgent ?? catalogue.default;
      if (!catalogue.agents.some((listed) => listed.name === agent)) throw RequestError.invalidParams(undefined, `this turnhost has no agent ${agent} (its agents: ${catalogue.agents.map((a) => a.name).join(', ')})`);
      const sessionId = `s-${randomBytes(6).toString('hex')}`;
      const draft: Draft = { cwd: params.cwd, agent, model: null };
      this.drafts.set(sessionId, draft);
      return { sessionId, configOptions: sessionConfigOptions(catalogue, draft, this.fixedAgent !== null) };
    })
    .onRequest('session/set_config_option', async ({ params }) => {
      const draft = this.drafts.get(params.sessionId);
      if (draft === undefined) throw RequestError.invalidParams(undefined, `session ${params.sessionId}'s agent and model are fixed once its first prompt ran (a model may be changed with /model where its agent has models)`);
      const catalogue = await this.client.agents();
      const value = String(params.value);
      if (params.configId === AGENT_OPTION && this.fixedAgent === null && catalogue.agents.some((listed) => listed.name === value)) {
        draft.agent = value;
        draft.model = null;
      } else if (params.configId === MODEL_OPTION && (catalogue.agents.find((listed) => listed.name === draft.agent)?.models ?? []).includes(value)) {
        draft.model = value;
      } else {
        throw RequestError.invalidParams(undefined, `${params.configId} cannot be ${value} here`);
      }
      return { configOptions: sessionConfigOptions(catalogue, draft, this.fixedAgent !== null) };
    })
    .onRequest('session/load', async ({ params, client: editor }) => {
      const sid = params.sessionId;
      if (this.drafts.has(sid)) return {};
      await this.client.resumeSession(sid).catch((err: unknown) => {
        throw err instanceof RpcError && err.code === ErrorCodes.sessionNotFound ? RequestError.resourceNotFound(sid) : err;
      });
      const { messages } = await this.client.history(sid);
      for (const update of historyUpdates(messages)) await editor.notify('session/update', { sessionId: sid, update });
      return {};
    })
    // A fork at the session's last ended turn (PROTOCOL.md §2.2), working where the editor says.
    .onRequest('session/fork', async ({ params }) => {
      const forked = await this.client.forkSession(params.sessionId, { cwd: params.cwd }).catch((err: unknown) => {
        throw err instanceof RpcError && err.code === ErrorCodes.sessionNotFound ? RequestError.resourceNotFound(params.sessionId) : err;
      });
      return { sessionId: forked.session_id };
    })
    .onRequest('session/prompt', async ({ params, client: editor }) => this.prompt(params.sessionId, editorPrompt(params.prompt), editor))
    .onNotification('session/cancel', async ({ params }) => {
      const turnId = this.running.get(params.sessionId);
      if (turnId !== undefined) await this.client.interrupt(params.sessionId, { turn_id: turnId, keep_queue: true });
    });

  constructor(
    private readonly client: TurnhostClient,
    private readonly fixedAgent: string | null,
  ) {}

  /** A draft's first prompt makes it in turnhost, with what the editor chose; the choice is fixed from then on. */
  private async made(sid: string): Promise<void> {
    const draft = this.drafts.get(sid);
    if (draft === undefined) return;
    await this.client.createSession({ session_id: sid, cwd: draft.cwd, agent: draft.agent, ...(draft.model === null ? {} : { model: draft.model }) });
    this.drafts.delete(sid);
  }

  /** The agent's questions, asked of the editor as its capabilities allow: a form, permission options, or not at all. */
  answerQuestionsThrough(editor: AgentContext): void {
    this.client.onApproval(async (request, { signal }) => approvalAnswer(request, await editor.request('session/request_permission', approvalPermission(request.session_id, request), withdrawnBy(signal))));
    this.client.onClarify(async (request, { signal }) => {
      if (this.editorCapabilities.elicitation?.form) {
        return clarifyFromElicitation(request, await editor.request('elicitation/create', clarifyElicitation(request.session_id, request), withdrawnBy(signal)));
      }
      const permission = clarifyPermission(request.session_id, request);
      if (permission === null) return null; // no way to ask this editor: the agent reads no answer
      return clarifyFromPermission(request, await editor.request('session/request_permission', permission, withdrawnBy(signal)));
    });
  }

  /** A prompt runs as its turn (after the turns queued before it); its updates stream until that turn ends. */
  private async prompt(sid: string, prompt: ReturnType<typeof editorPrompt>, editor: AgentContext): Promise<{ stopReason: StopReason }> {
    await this.made(sid);
    const events = this.client.events(sid);
    try {
      const submitted = await this.client.submit(sid, prompt.text, prompt.content === undefined ? {} : { content: prompt.content }).catch((err: unknown) => {
        // A file refused at the door (its type, its size, what the agent takes) is the editor's bad request.
        throw err instanceof RpcError && err.code === ErrorCodes.invalidParams ? RequestError.invalidParams(undefined, err.message) : err;
      });
      const turnId = submitted.turn_id;
      if (turnId === undefined) return { stopReason: 'end_turn' };
      this.running.set(sid, turnId);
      let started = false;
      for await (const event of events) {
        if (!started) {
          if (!('turn_id' in event.payload) || event.payload.turn_id !== turnId) continue; // an earlier turn's
          started = true;
        }
        const update = updateOf(event);
        if (update !== null) await editor.notify('session/update', { sessionId: sid, update });
        const stop = stopOf(event, turnId);
        if (stop !== null) return { stopReason: stop };
      }
      throw RequestError.internalError(undefined, 'the connection to the daemon closed');
    } finally {
      this.running.delete(sid);
      await events.return?.();
    }
  }
}

/** An editor's request is withdrawn with the question (answered elsewhere, timed out, interrupted). */
function withdrawnBy(signal: AbortSignal) {
  return { cancellationSignal: signal, stopWaitingOnCancel: true };
}

/** How the prompt's turn ended: null while it runs; a failed turn is an error with turnhost's reason. */
function stopOf(event: SessionEvent, turnId: string): StopReason | null {
  if (event.type === 'turn.end' && event.payload.turn_id === turnId) return event.payload.interrupted ? 'cancelled' : 'end_turn';
  if (event.type === 'turn.error' && event.payload.turn_id === turnId) {
    if (event.payload.reason === 'interrupted') return 'cancelled';
    throw RequestError.internalError({ reason: event.payload.reason }, event.payload.message);
  }
  return null;
}
