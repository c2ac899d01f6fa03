// One session's turns followed through the gateway, as a client of their own, for the doors that
// hand a turn to another agent and answer when it is done (MCP and A2A, PROTOCOL.md §7.3, §7.4):
// what each turn wrote, how it ended, and the question it waits on. It resumes the session as a
// client does (the events the gateway still holds replayed in order, then the live ones, and the
// open questions): so nothing is missed between what it read and what comes, and nothing is seen
// twice. It is open before a turn is looked up or submitted; an end it did not see is read from
// the store.
import { nextClientId } from '../actors/daemon/client-connection.js';
import { authorize, callMethod } from '../actors/daemon/client-methods.js';
import { notFound } from '../actors/daemon/session-access.js';
import { clientContext, type ClientContext } from '../actors/daemon/client-context.js';
import type { GatewayMsg, SessionPeek } from '../actors/daemon/supervisor-messages.js';
import { ask, tell, SECOND_MS, type Ref } from '../actors/runtime.js';
import { isRecord, type UnknownRecord } from '../protocol/fields.js';
import type { Question } from './question-answer.js';
import type { StoredTurn } from '../persistence/reader.js';

/** The id of the follower's own session.resume: its answer is not an event, and is let pass. */
const RESUMED = 'turn-follower-resume';
const PEEK_TIMEOUT_MS = 10 * SECOND_MS;

/** Where a turn is, as a door says it. */
export type TurnState =
  | { status: 'queued' | 'running'; reply: string }
  | { status: 'input_required'; reply: string; question: Question }
  | { status: 'completed'; reply: string; usage?: unknown }
  | { status: 'canceled'; reply: string }
  | { status: 'failed'; reply: string; reason: string; message: string };

interface Seen {
  reply: string;
  end: TurnState | null;
  /** Its turn.started was seen: the follower saw the whole turn, and its end needs no store read. */
  started: boolean;
}

export class TurnFollower {
  /** What each turn did since the follower attached, by turn id. */
  private readonly seen = new Map<string, Seen>();
  /** The turn whose events come now (turn.started to its end): a delta names no turn. */
  private current: string | null = null;
  /** The session's open questions: asked by its running turn. */
  private readonly open = new Map<string, Question>();
  /** Waits for the session's next news (state's). */
  private readonly waiters = new Set<() => void>();
  private onText: ((turnId: string, text: string) => void) | null = null;

  private constructor(
    readonly sid: string,
    readonly ctx: ClientContext,
  ) {}

  /** Attached to `sid` as `shared`'s person, who must be allowed to read it. */
  /**
   * On `sid` as `shared`'s person, who must be allowed to read it. `replay`: resumed from the
   * oldest event the gateway holds (to follow a turn already under way); else attached from now,
   * with the open questions (for a turn about to be submitted, or answered: a resume's replay and
   * its host round trip are what such a call would wait on).
   */
  static async open(shared: Omit<ClientContext, 'clientId' | 'cwds' | 'attached'>, sid: string, replay: boolean): Promise<TurnFollower> {
    const ctx = clientContext(shared, nextClientId());
    const follower = new TurnFollower(sid, ctx);
    tell(ctx.gateway, { kind: 'client-open', sink: { id: ctx.clientId, write: (line) => follower.line(line) } });
    const peek = (): Promise<SessionPeek> => ask(ctx.gateway, (replyTo: Ref<SessionPeek>): GatewayMsg => ({ kind: 'peek', sid, replyTo }), PEEK_TIMEOUT_MS);
    try {
      if (replay) {
        // Answered on the sink, before the replay: the follower reads the events, not the answer.
        await callMethod('session.resume', { session_id: sid, after_seq: 0 }, ctx, RESUMED);
        // The gateway takes its messages in order and writes to the sink as it takes them: once it
        // has answered this, the replay and the open questions are in.
        await peek();
      } else {
        // From now on only: attached (as a reader of the session may be), then its open questions.
        if (!ctx.identity.admin) await authorize('session.history', { session_id: sid }, ctx);
        if ((await (await ctx.reader())?.session(sid)) === undefined) throw notFound(sid);
        tell(ctx.gateway, { kind: 'attach', sid, clientId: ctx.clientId });
        for (const question of (await peek()).open_requests as Question[]) follower.open.set(question.id, question);
      }
    } catch (err) {
      follower.close();
      throw err;
    }
    return follower;
  }

  /** Each piece of a turn's reply as it streams (MCP's progress). */
  streamText(onText: (turnId: string, text: string) => void): void {
    this.onText = onText;
  }

  /** An open question of the session (asked before or since the follower attached). */
  question(requestId: string): Question | undefined {
    return this.open.get(requestId);
  }

  /** The question the session's running turn waits on, the latest asked; undefined when none. */
  waitingQuestion(): Question | undefined {
    return [...this.open.values()].at(-1);
  }

  /** What the turn has written so far, as the follower saw it (replayed and live). */
  replySoFar(turnId: string): string {
    return this.seen.get(turnId)?.reply ?? '';
  }

  /** The question is answered: the turn runs on. */
  answered(requestId: string): void {
    this.open.delete(requestId);
  }

  /**
   * The turn's state once it ends or asks, or as it is when `waitMs` runs out (or `signal`
   * aborts). What it did before the follower attached is read from the store.
   */
  async state(turnId: string, waitMs: number, signal?: AbortSignal): Promise<TurnState> {
    const deadline = Date.now() + waitMs;
    for (;;) {
      const state = await this.now(turnId);
      const left = deadline - Date.now();
      if (settled(state) || left <= 0 || signal?.aborted === true) return state;
      await this.news(left, signal);
    }
  }

  close(): void {
    tell(this.ctx.gateway, { kind: 'client-closed', clientId: this.ctx.clientId });
    for (const wake of this.waiters) wake();
  }

  /** Where the turn is now: its end as seen or stored; asking while it runs and a question is open. */
  private async now(turnId: string): Promise<TurnState> {
    const seen = this.seen.get(turnId);
    // A failure is as its event said; so is an end of a turn seen whole. Else the reply is the
    // stored one (the follower attached after the turn's first words).
    if (seen?.end && (seen.started || seen.end.status === 'failed')) return seen.end;
    // A turn seen starting is seen ending: its end event follows its commit, and reading its reply
    // back from the history instead costs what the history is long.
    const stored = seen?.started ? 'running' : await this.stored(turnId);
    if (seen?.end && typeof stored !== 'string') return { ...seen.end, ...stored };
    const reply = seen?.reply ?? '';
    const question = this.waitingQuestion();
    if (stored === 'running' && question !== undefined) return { status: 'input_required', reply, question };
    return typeof stored === 'string' ? { status: stored, reply } : stored;
  }

  /** Resolves at the session's next event or question, or after `ms`. */
  private news(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal?.addEventListener('abort', done, { once: true });
      this.waiters.add(done);
    });
  }

  /** The turn as the store has it: how it ended, or `running`, or `queued` (no turn yet: its prompt waits). */
  private async stored(turnId: string): Promise<TurnState | 'running' | 'queued'> {
    const turn = await (await this.ctx.reader())?.turn(turnId);
    if (turn === undefined || turn.sid !== this.sid) return 'queued';
    if (turn.status === 'running') return 'running';
    if (turn.status === 'failed' || turn.status === 'lost') return storedState(turn, '');
    const { messages } = (await callMethod('session.history', { session_id: this.sid }, this.ctx)) as { messages: HistoryLine[] };
    return storedState(turn, replyOf(messages, turnId));
  }

  private line(line: string | Buffer): void {
    let message: unknown;
    try {
      message = JSON.parse(typeof line === 'string' ? line : line.toString('utf8'));
    } catch {
      return;
    }
    if (!isRecord(message) || !isRecord(message['params']) || message['params']['session_id'] !== this.sid) return;
    const params = message['params'];
    if (message['method'] === 'event') {
      const type = String(params['type']);
      this.event(type, isRecord(params['payload']) ? params['payload'] : {});
      // A reply's pieces settle nothing: a waiting state() is woken by an end or a question, not by each delta.
      if (type !== 'turn.end' && type !== 'turn.error') return;
    } else if (typeof message['id'] === 'string' && typeof message['method'] === 'string') {
      this.open.set(message['id'], { id: message['id'], method: message['method'], params });
    } else return;
    for (const wake of [...this.waiters]) wake();
  }

  private event(type: string, payload: UnknownRecord): void {
    const turnId = typeof payload['turn_id'] === 'string' ? payload['turn_id'] : this.current;
    if (turnId === null) return;
    const seen = this.seen.get(turnId) ?? { reply: '', end: null, started: false };
    this.seen.set(turnId, seen);
    switch (type) {
      case 'turn.started':
        this.current = turnId;
        seen.started = true;
        return;
      case 'message.delta': {
        const text = String(payload['text'] ?? '');
        seen.reply += text;
        this.onText?.(turnId, text);
        return;
      }
      case 'message.complete':
        seen.reply = String(payload['text'] ?? seen.reply);
        return;
      case 'request.cancel':
        this.open.delete(String(payload['id']));
        return;
      case 'turn.end':
        seen.end = payload['interrupted'] === true ? { status: 'canceled', reply: seen.reply } : { status: 'completed', reply: seen.reply, ...(payload['usage'] === undefined ? {} : { usage: payload['usage'] }) };
        this.turnOver(turnId);
        return;
      case 'turn.error':
        // `crash`: its host died under it; the store calls that turn `lost`, as the doors do.
        seen.end = { status: 'failed', reply: seen.reply, reason: payload['reason'] === 'crash' ? 'lost' : String(payload['reason'] ?? 'agent'), message: String(payload['message'] ?? 'the turn failed') };
        this.turnOver(turnId);
        return;
    }
  }

  private turnOver(turnId: string): void {
    if (this.current === turnId) this.current = null;
    this.open.clear();
  }
}

/** What session.history gives a door: enough to find a turn's reply. */
export interface HistoryLine {
  role: string;
  content: string;
  turn_id: string | null;
}

/** A turn's reply: its last assistant message ('' when it has none). */
export function replyOf(history: readonly HistoryLine[], turnId: string): string {
  return history.filter((m) => m.turn_id === turnId && m.role === 'assistant').at(-1)?.content ?? '';
}

/** A stored turn as a door says it (`lost`: its host died under it). */
export function storedState(turn: StoredTurn, reply: string): TurnState {
  switch (turn.status) {
    case 'running':
      return { status: 'running', reply };
    case 'completed':
      return { status: 'completed', reply };
    case 'interrupted':
      return { status: 'canceled', reply };
    default:
      return { status: 'failed', reply, reason: turn.status === 'lost' ? 'lost' : 'agent', message: turn.error ?? 'the turn failed' };
  }
}

/** Ended, or waiting on its caller: what a blocking call answers with. */
export function settled(state: TurnState): boolean {
  return state.status !== 'queued' && state.status !== 'running';
}
