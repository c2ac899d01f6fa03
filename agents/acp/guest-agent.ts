// `--agent acp` (AGENT.md §6): any Agent Client Protocol agent as a turnhost agent. turnhost is the
// ACP client; the guest keeps its own context, tools and model, and turnhost keeps the rest.
import { mkdirSync, realpathSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { AgentFailure, type Agent, type AgentEvent, type TurnContext, type TurnResult } from '../agent.js';
import { secretsRedactor, type Redactor } from '../model/key-redaction.js';
import type { ConfigSource } from '../agent-config.js';
import { approvalPolicy, type Policy } from '../model/approval.js';
import { loadGuestConfig, type GuestConfig } from './guest-config.js';
import type { GuestLog } from './guest-process.js';
import { runGuestTurn } from './guest-turn.js';
import { SessionPool } from './session-pool.js';
import type { GuestSlots } from './guest-slots.js';
import { HomeSync } from './home-sync.js';
import type { HomeSnapshots } from '../../persistence/home-snapshots.js';
import { join } from 'node:path';
import type { SandboxStatus } from '../../protocol/outbound.js';
import { asConfigError } from '../sandbox/sandbox-try.js';
import { Sandboxes } from '../sandbox/sandbox.js';
import { defaultWorkspace } from '../sandbox/workspaces.js';

/** What a guest keeps itself: its model, its prompt and its context (AGENT.md §6). */
const GUEST_OWNED_ROUTES = new Set(['session.compress', 'slash.compress', 'slash.model', 'slash.personality', 'slash.prompt']);

/** The store a guest's home follows its session through (AGENT.md §6), once the host has opened it. */
export interface HomeStore {
  snapshots: HomeSnapshots;
  /** Several nodes may share it (PostgreSQL): `home_sync.mode auto` is on. */
  shared: boolean;
}

export interface GuestAgentOptions extends ConfigSource {
  log: GuestLog;
  /** Null before the host opened its store, and where there is none (a host run in a test's own process). */
  homes: () => HomeStore | null;
  /** `max_live_guests` (AGENT.md §8): the bound shared by every guest agent of the host. */
  slots: GuestSlots;
  /** A folder each new agent home starts as a copy of; null: it starts empty. */
  homeTemplate: string | null;
}

export async function createGuestAgent(options: GuestAgentOptions): Promise<Agent> {
  const config = loadGuestConfig(options);
  let sandboxes: Sandboxes;
  try {
    sandboxes = await Sandboxes.start(config.sandbox, options.log, { homeTemplate: options.homeTemplate });
  } catch (err) {
    throw asConfigError(err, config.file);
  }
  return new GuestAgent(config, sandboxes, options.log, options.slots, homeSyncOf(config, sandboxes, options), options.definition ?? 'acp');
}

class GuestAgent implements Agent {
  readonly name = 'acp';
  private readonly pool: SessionPool;
  private readonly policy: Policy;
  private readonly redact: Redactor;

  constructor(
    private readonly config: GuestConfig,
    private readonly sandboxes: Sandboxes,
    log: GuestLog,
    slots: GuestSlots,
    private readonly homeSync: () => HomeSync | null,
    /** Its name in the catalogue (AGENT.md §8), as a refusal names it. */
    private readonly shownName: string,
  ) {
    this.pool = new SessionPool(config, sandboxes, log, slots, homeSync);
    this.redact = secretsRedactor(config.secrets);
    this.policy = approvalPolicy(config.approval, Object.keys(config.mcpServers));
  }

  async runTurn(turn: TurnContext): Promise<TurnResult> {
    const guarded = this.config.secrets.length === 0 ? turn : withoutSecrets(turn, this.redact);
    try {
      const live = await this.pool.acquire(guarded, await this.workFolder(turn));
      if (turn.signal.aborted) {
        // Interrupted while the guest started: it never saw the prompt, which is stored without a reply.
        this.pool.turnEnded(live, turn.history.length + 1);
        return { reply: '' };
      }
      let outcome;
      try {
        outcome = await runGuestTurn(this.config, live, guarded, this.policy, this.shownName);
      } catch (err) {
        // What the guest remembers of a failed turn is unknown: its next turn loads the session again.
        this.pool.turnFailed(live);
        throw err;
      }
      this.pool.turnEnded(live, turn.history.length + outcome.storedMessages);
      return { ...outcome.result, reply: this.redact(outcome.result.reply) };
    } catch (err) {
      throw err instanceof AgentFailure ? new AgentFailure(err.reason, this.redact(err.message)) : new Error(this.redact((err as Error).message));
    }
  }

  get sandbox(): SandboxStatus {
    return this.sandboxes.status;
  }

  refusesRoute(route: string): string | null {
    return GUEST_OWNED_ROUTES.has(route) ? `${route} is not served by a guest agent: it keeps its own model, prompt and context (AGENT.md §6)` : null;
  }

  async close(): Promise<void> {
    await this.pool.close();
  }

  retire(): void {
    this.pool.retire();
  }

  /**
   * A deleted session (PROTOCOL.md §2.3): its live guest ends, then its home goes, and the
   * workspace turnhost made for it when it named no folder (acp.cwd is a person's: it stays).
   */
  async forget(sid: string, place: { cwd: string | null; person: string; flat: boolean }): Promise<void> {
    await this.pool.release(sid);
    this.homeSync()?.forget(sid);
    await rm(this.sandboxes.homeOf(sid), { recursive: true, force: true });
    if (place.cwd === null && this.config.cwd === undefined) {
      await rm(defaultWorkspace(this.config.sandbox.workspacesRoot, sid, { person: place.person, flat: place.flat }), { recursive: true, force: true });
    }
  }

  liveSessions(): number {
    return this.pool.liveCount;
  }

  /** The session's own cwd, else acp.cwd, else a folder of its own in its owner's workspace (made 0700, AGENT.md §7). */
  private async workFolder(turn: TurnContext): Promise<string> {
    if (turn.cwd !== null) return turn.cwd;
    if (this.config.cwd !== undefined) return this.config.cwd;
    const folder = defaultWorkspace(this.config.sandbox.workspacesRoot, turn.sid, await turn.workspace());
    mkdirSync(folder, { recursive: true, mode: 0o700 });
    return realpathSync(folder);
  }
}

/**
 * The guest's home in the store (AGENT.md §6), made when the host's store is first asked for: on
 * with a store several nodes share (`auto`), or as `acp.home_sync.mode` forces it; only for homes
 * of their own, which a sandbox gives each session (unsandboxed, sessions share one).
 */
function homeSyncOf(config: GuestConfig, sandboxes: Sandboxes, options: GuestAgentOptions): () => HomeSync | null {
  let made: HomeSync | null | undefined;
  return () => {
    if (made !== undefined) return made;
    const store = options.homes();
    if (store === null) return null;
    const on = config.homeSync.mode === 'on' || (config.homeSync.mode === 'auto' && store.shared);
    made = on && sandboxes.status.mode === 'required' ? new HomeSync(store.snapshots, config.homeSync, (sid) => sandboxes.homeOf(sid), join(options.home, 'state', 'homes'), options.log) : null;
    return made;
  };
}

/**
 * The turn as the guest's part sees it, with the guest's secrets taken out of everything it
 * sends on: events, history, questions (AGENT.md §6: never in a frame, an event or a row).
 */
function withoutSecrets(turn: TurnContext, redact: Redactor): TurnContext {
  const clean = <T>(value: T): T => JSON.parse(redact(JSON.stringify(value))) as T;
  return {
    ...turn,
    emit: (event: AgentEvent) => turn.emit(clean(event)),
    append: (message) => turn.append(clean(message)),
    ask: (method, params, options) => turn.ask(method, clean(params), options),
  };
}
