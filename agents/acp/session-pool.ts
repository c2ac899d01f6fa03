// The live guest sessions (AGENT.md §6): at most `max_live_sessions` at once, and `max_live_guests`
// across every guest agent of the host (§8, guest-slots.ts), the least recently used released
// first; one idle for `idle_secs` released; a released session loads again at its next turn. A
// retired pool (its definition changed at a reload) releases each session as soon as it is idle. A session's turns never overlap (its session actor runs one at a time), so a live
// session belongs to one turn at a time.
import type { TurnContext } from '../agent.js';
import type { GuestConfig } from './guest-config.js';
import type { GuestLog } from './guest-process.js';
import { LiveSession, type ForkOrigin } from './live-session.js';
import type { Sandboxes } from '../sandbox/sandbox.js';
import type { GuestSlots, SlotHolder } from './guest-slots.js';
import type { HomeSync } from './home-sync.js';

export class SessionPool implements SlotHolder {
  /** In use order: the first is the least recently used. */
  private readonly live = new Map<string, LiveSession>();
  private closed = false;
  private retired = false;
  private readonly leaveSlots: () => void;

  constructor(
    private readonly config: GuestConfig,
    private readonly sandboxes: Sandboxes,
    private readonly log: GuestLog,
    private readonly slots: GuestSlots,
    /** The guest's home in the store (AGENT.md §6); null when it stays on this machine. */
    private readonly homeSync: () => HomeSync | null,
  ) {
    this.leaveSlots = slots.join(this);
  }

  get liveCount(): number {
    return this.live.size;
  }

  oldestIdle(): { sid: string; usedAt: number } | null {
    for (const [sid, session] of this.live) if (!session.busy) return { sid, usedAt: session.usedAt };
    return null;
  }

  /**
   * The session's live guest for this turn, made live when it is not (or when its guest died, or
   * its history moved on without it). The caller gives it back with `turnEnded`.
   */
  async acquire(turn: TurnContext, cwd: string): Promise<LiveSession> {
    if (this.closed) throw new Error('the guest agents are closing');
    let session = this.live.get(turn.sid);
    if (session !== undefined && (!session.healthy || session.knownHistory !== turn.history.length)) {
      await this.release(turn.sid);
      session = undefined;
    }
    if (session === undefined) {
      // Before session/load: a home this node lacks, or holds an older snapshot of, comes from the store.
      await this.homeSync()?.restore(turn.sid);
      const origin = await this.forkMemory(turn);
      session = await LiveSession.open(this.config, turn, cwd, this.log, await this.sandboxes.open(turn.sid, cwd, { pinFolder: true }), origin);
      this.log.info({ sid: turn.sid, pid: session.process.pid, acp_session: session.sessionId }, 'guest session live');
    }
    this.live.delete(turn.sid);
    this.live.set(turn.sid, session);
    session.busy = true;
    session.usedAt = Date.now();
    if (session.idleTimer !== null) clearTimeout(session.idleTimer);
    session.idleTimer = null;
    this.releaseOverBound();
    return session;
  }

  /** The turn is over: the session is idle from now, and counted against the bound again. */
  turnEnded(session: LiveSession, historyLength: number): void {
    session.busy = false;
    session.sink = null;
    session.knownHistory = historyLength;
    if (this.live.get(session.sid) !== session) return;
    if (!session.healthy || this.retired) {
      void this.release(session.sid);
      return;
    }
    session.idleTimer = setTimeout(() => void this.release(session.sid), this.config.idleMs);
    session.idleTimer.unref();
    this.homeSync()?.turnEnded(session.sid);
    this.releaseOverBound();
  }

  turnFailed(session: LiveSession): void {
    session.busy = false;
    session.sink = null;
    if (this.live.get(session.sid) === session) void this.release(session.sid);
  }

  async release(sid: string): Promise<void> {
    const session = this.live.get(sid);
    if (session === undefined) return;
    this.live.delete(sid);
    await session.end();
    this.log.info({ sid, pid: session.process.pid }, 'guest session released');
    // What the guest wrote last, after its process ended (in the background: a release may be in a turn's way).
    this.homeSync()?.released(sid);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.leaveSlots();
    await Promise.all([...this.live.keys()].map((sid) => this.release(sid)));
  }

  /** Its definition changed (AGENT.md §8): idle sessions go now, busy ones when their turns end. */
  retire(): void {
    this.retired = true;
    for (const [sid, session] of this.live) if (!session.busy) void this.release(sid);
  }

  /**
   * A fork's guest takes its source's memory (PROTOCOL.md §2.2): what the source's guest keeps in
   * its home is copied to the fork's, and the source is asked again after the copy. A source that
   * ran a turn meanwhile may have written part of it into the copy: then the copy goes, and the
   * fork's guest starts anew.
   */
  private async forkMemory(turn: TurnContext): Promise<ForkOrigin | null> {
    if (turn.agentSessionId !== null) return null;
    const origin = await turn.forkOrigin();
    if (origin === null) return null;
    // The source's home, on a node that lacks it (or holds an older one), is the store's latest of it.
    await this.homeSync()?.restore(origin.sid);
    // Nothing copied now (unsandboxed, the home every session shares; or a home already made): nothing to check.
    if (!(await this.sandboxes.seedHome(turn.sid, origin.sid))) return origin;
    if ((await turn.forkOrigin())?.agentSessionId === origin.agentSessionId) return origin;
    await this.sandboxes.dropHome(turn.sid);
    return null;
  }

  /** Past either bound, idle sessions go, least recently used first; busy ones wait for their turns to end. */
  private releaseOverBound(): void {
    let over = this.live.size - this.config.maxLiveSessions;
    for (const [sid, session] of this.live) {
      if (over <= 0) break;
      if (session.busy) continue;
      over--;
      void this.release(sid);
    }
    this.slots.releaseOverBound();
  }
}
