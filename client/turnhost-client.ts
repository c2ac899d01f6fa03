// The typed client library (`turnhost/client`): one method per request of PROTOCOL.md §2, each
// session's events as an async iterator, handlers that answer the agent's questions, and a
// connection that comes back by itself. After a dropped socket or a daemon restart it reconnects
// (bounded attempts, backoff) and resumes every session it follows from the last event seen
// (`session.resume` with `after_seq`), so a consumer sees one unbroken stream of events.
import { randomUUID } from 'node:crypto';
import { homeFrom, homePaths } from '../protocol/home-paths.js';
import { ErrorCodes, RpcError } from '../protocol/client-rpc.js';
import { RpcClient, type EventParams, type ServerRequest } from './rpc-connection.js';
import type {
  PutBlob,
  AgentsList,
  ApprovalHandler,
  ClarifyHandler,
  ControlResult,
  ControlRoute,
  CreateResult,
  ForkResult,
  ImportResult,
  HistoryMessage,
  HostState,
  HostStatusResult,
  LockResult,
  ResumeResult,
  RewindResult,
  SessionEvent,
  SessionStatus,
  SessionSummary,
  ShareRole,
  QueueAction,
  QueueState,
  SubmitOptions,
  SubmitResult,
  SessionUsage,
  UsageGroup,
  UsageReport,
} from './types.js';

export interface ReconnectOptions {
  /** Attempts after a drop before giving up (default 10). */
  attempts?: number;
  /** First wait; it doubles each attempt (default 100 ms)… */
  initialDelayMs?: number;
  /** …up to this (default 2000 ms). */
  maxDelayMs?: number;
}

export interface ConnectOptions {
  /** The turnhost home (default $TURNHOST_HOME, else ~/.turnhost). */
  home?: string;
  /** The daemon's socket, instead of `<home>/turnhost.sock`. */
  socket?: string;
  /** The daemon's HTTP edge (`http://host:port`), reached by its WebSocket instead of the socket; needs `token`. */
  url?: string;
  /**
   * The edges of several nodes of one cluster (PROTOCOL.md §6.2), tried in turn: when the node this
   * client is connected to goes away, it moves to the next one that answers and resumes its
   * sessions there. The same `token` for all (give the nodes one `$TURNHOST_TOKEN`).
   */
  urls?: readonly string[];
  /** The edge's token (`turnhost token`), with `url` or `urls`. */
  token?: string;
  /** `false`: a dropped connection stays dropped. */
  reconnect?: ReconnectOptions | false;
  /** Longest wait for any answer (default 60 s). */
  callTimeoutMs?: number;
}

export type ConnectionState = 'connected' | 'reconnecting' | 'closed';

/** The connection dropped and could not be made again within the reconnect attempts, or was closed. */
export class ConnectionClosedError extends Error {}

/** The daemon could not be reached, with the error's code (ENOENT, ECONNREFUSED, EAUTH for a wrong token…). */
export class DaemonUnreachableError extends Error {
  constructor(
    /** The socket path or the edge's URL. */
    readonly socket: string,
    readonly code: string | undefined,
  ) {
    super(
      code === 'EAUTH'
        ? `the turnhost edge at ${socket} refused the token (see \`turnhost token\`)`
        : `no turnhost daemon answers at ${socket}${code ? ` (${code})` : ''}: start one with \`turnhost start\``,
    );
  }
}

const DEFAULT_RECONNECT: Required<ReconnectOptions> = { attempts: 10, initialDelayMs: 100, maxDelayMs: 2000 };
const DEFAULT_CALL_TIMEOUT_MS = 60_000;
/** Server request ids already handed to a handler, so that a re-sent one is not asked twice. */
const HANDLED_REQUESTS_KEPT = 1000;
/** A submit cut off by a dropped connection is sent again, with the same client_message_id, up to this many times in all. */
const RESUBMIT_ATTEMPTS = 3;

export async function connect(options: ConnectOptions = {}): Promise<TurnhostClient> {
  const reopen = opener(options);
  return new TurnhostClient(await reopen(), reopen, options);
}

/**
 * How a connection is made, the first time and after each drop: the socket, or an edge's
 * WebSocket; with several edges, the one that answered last first, then the others in order.
 */
function opener(options: ConnectOptions): () => Promise<RpcClient> {
  const urls = options.urls ?? (options.url === undefined ? [] : [options.url]);
  if (urls.length > 0) {
    const { token } = options;
    if (token === undefined) throw new Error('connect({url}) needs the edge\'s token: connect({url, token})');
    let current = 0;
    return async () => {
      let failure: DaemonUnreachableError | undefined;
      for (let tried = 0; tried < urls.length; tried++) {
        const url = urls[(current + tried) % urls.length]!;
        try {
          const rpc = await RpcClient.connectUrl(url, token);
          current = (current + tried) % urls.length;
          return rpc;
        } catch (err) {
          failure ??= new DaemonUnreachableError(url, (err as NodeJS.ErrnoException).code);
        }
      }
      throw failure!;
    };
  }
  const socket = options.socket ?? homePaths(homeFrom(options.home)).socket;
  return () => RpcClient.connect(socket).catch((err: unknown) => Promise.reject(new DaemonUnreachableError(socket, (err as NodeJS.ErrnoException).code)));
}

/** One consumer's queue of a session's events. */
class EventQueue {
  private readonly items: SessionEvent[] = [];
  private waiter: ((result: IteratorResult<SessionEvent>) => void) | null = null;
  private failWaiter: ((err: Error) => void) | null = null;
  private ended: Error | null | undefined;

  constructor(private readonly onDone: () => void) {}

  push(event: SessionEvent): void {
    if (this.ended !== undefined) return;
    if (this.waiter) {
      const resolve = this.waiter;
      this.waiter = this.failWaiter = null;
      resolve({ value: event, done: false });
    } else {
      this.items.push(event);
    }
  }

  /** Ends the iteration: cleanly (null), or by throwing `error` to the consumer. */
  end(error: Error | null): void {
    if (this.ended !== undefined) return;
    this.ended = error;
    if (this.waiter) {
      const [resolve, reject] = [this.waiter, this.failWaiter!];
      this.waiter = this.failWaiter = null;
      if (error) reject(error);
      else resolve({ value: undefined, done: true });
    }
  }

  iterator(): AsyncIterableIterator<SessionEvent> {
    const next = (): Promise<IteratorResult<SessionEvent>> => {
      const item = this.items.shift();
      if (item !== undefined) return Promise.resolve({ value: item, done: false });
      if (this.ended !== undefined) return this.ended ? Promise.reject(this.ended) : Promise.resolve({ value: undefined, done: true });
      return new Promise((resolve, reject) => {
        this.waiter = resolve;
        this.failWaiter = reject;
      });
    };
    const stop = (): Promise<IteratorResult<SessionEvent>> => {
      this.end(null);
      this.onDone();
      return Promise.resolve({ value: undefined, done: true });
    };
    const iterator: AsyncIterableIterator<SessionEvent> = { next, return: stop, [Symbol.asyncIterator]: () => iterator };
    return iterator;
  }
}

interface Followed {
  lastSeq: number;
  queues: Set<EventQueue>;
  /** Events that came while a resume of this session was on its way: held until its answer says where the replay starts. */
  held: SessionEvent[] | null;
}

export class TurnhostClient {
  private state: ConnectionState = 'connected';
  private readonly sessions = new Map<string, Followed>();
  private readonly handled = new Set<string>();
  private readonly withdrawals = new Map<string, AbortController>();
  private clarifyHandler: ClarifyHandler | null = null;
  private approvalHandler: ApprovalHandler | null = null;
  private readonly reconnect: Required<ReconnectOptions> | null;
  private readonly callTimeoutMs: number;
  /** Called when the connection drops, comes back, or ends. */
  onConnectionState: (state: ConnectionState) => void = () => {};
  private readonly stateWaiters = new Set<(state: ConnectionState) => void>();

  constructor(
    private rpc: RpcClient,
    private readonly reopen: () => Promise<RpcClient>,
    options: ConnectOptions,
  ) {
    this.reconnect = options.reconnect === false ? null : { ...DEFAULT_RECONNECT, ...options.reconnect };
    this.callTimeoutMs = options.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
    this.wire(rpc);
  }

  get connectionState(): ConnectionState {
    return this.state;
  }

  // ── the methods of PROTOCOL.md §2 ──────────────────────────────────────────────────────────

  /** A new session; `agent` and `model` choose among the daemon's catalogue (AGENT.md §8, `agents()`). */
  async createSession(params: { session_id?: string; cwd?: string; agent?: string; model?: string } = {}): Promise<CreateResult> {
    const result = await this.call<CreateResult>('session.create', params);
    this.follow(result.session_id);
    return result;
  }

  /** Attaches to a stored session; with `after_seq`, the events after it are replayed first. */
  async resumeSession(sessionId: string, options: { after_seq?: number } = {}): Promise<ResumeResult> {
    const followed = this.follow(sessionId);
    if (options.after_seq === undefined) return this.call<ResumeResult>('session.resume', { session_id: sessionId });
    return this.resumeFrom(sessionId, followed, options.after_seq);
  }

  /** The sessions this caller may see; archived ones only with `archived: true`. */
  listSessions(params: { status?: SessionStatus; archived?: boolean } = {}): Promise<{ sessions: SessionSummary[] }> {
    return this.call('session.list', params);
  }

  /**
   * Deletes the session for good (PROTOCOL.md §2.3): its owner's or an admin's; refused (4009)
   * while a turn runs unless `interrupt`. Its forks keep their histories.
   */
  deleteSession(sessionId: string, options: { interrupt?: boolean } = {}): Promise<{ session_id: string; deleted: true }> {
    return this.call('session.delete', { session_id: sessionId, ...options });
  }

  /** Out of the lists (everything kept; a prompt brings it back), or back in. */
  archiveSession(sessionId: string, archived = true): Promise<{ session_id: string; archived: boolean }> {
    return this.call(archived ? 'session.archive' : 'session.unarchive', { session_id: sessionId });
  }

  /** Kept through retention, or not. */
  pinSession(sessionId: string, pinned = true): Promise<{ session_id: string; pinned: boolean }> {
    return this.call(pinned ? 'session.pin' : 'session.unpin', { session_id: sessionId });
  }

  /** The session as the lines of its file (`turnhost-session/1`, PROTOCOL.md §2.3). */
  exportSession(sessionId: string): Promise<{ session_id: string; format: string; lines: Record<string, unknown>[] }> {
    return this.call('session.export', { session_id: sessionId });
  }

  /** A session file's text as a new session of the caller's; refused whole (-32602, naming the line) when a line is bad. */
  importSession(data: string, options: { session_id?: string } = {}): Promise<ImportResult> {
    return this.call('session.import', { data, ...options });
  }

  /** The agents this caller may make a session with (AGENT.md §8). */
  agents(): Promise<AgentsList> {
    return this.call('agents.list', {});
  }

  /** Stores a file before a prompt names it (PROTOCOL.md §2.4); with `sessionId`, that session may read it at once. */
  putBlob(file: { bytes: Buffer; mimeType: string; name?: string }, sessionId?: string): Promise<PutBlob> {
    return this.call('blob.put', { mimeType: file.mimeType, data: file.bytes.toString('base64'), ...(file.name === undefined ? {} : { name: file.name }), ...(sessionId === undefined ? {} : { session_id: sessionId }) });
  }

  /** The session's line; `all`: with the superseded turns too, each message `superseded: true` (PROTOCOL.md §2.2). */
  history(sessionId: string, params: { limit?: number; all?: boolean } = {}): Promise<{ messages: HistoryMessage[] }> {
    return this.call('session.history', { session_id: sessionId, ...params });
  }

  /** A new session whose history is this one's up to `at_turn_id` (default: its last ended turn); followed. */
  async forkSession(sessionId: string, options: { at_turn_id?: string; new_session_id?: string; cwd?: string; agent?: string } = {}): Promise<ForkResult> {
    const result = await this.call<ForkResult>('session.fork', { session_id: sessionId, ...options });
    this.follow(result.session_id);
    return result;
  }

  /** What the session's turns spent, each and in all (PROTOCOL.md §5.7). */
  sessionUsage(sessionId: string): Promise<SessionUsage> {
    return this.call('session.usage', { session_id: sessionId });
  }

  /** The ledger's totals by person, session, model or day (a member: their own sessions only). */
  usage(params: { by?: UsageGroup; since?: string; until?: string } = {}): Promise<UsageReport> {
    return this.call('usage.report', params);
  }

  /** The session goes back to just after `toTurnId` (null: the beginning); what it leaves is superseded, not deleted. */
  rewind(sessionId: string, toTurnId: string | null): Promise<RewindResult> {
    return this.call('session.rewind', { session_id: sessionId, to_turn_id: toTurnId });
  }

  /** The last turn again: its prompt submitted anew, the old turn superseded. Answers as `submit` does. */
  retry(sessionId: string, options: SubmitOptions = {}): Promise<SubmitResult> {
    this.follow(sessionId);
    return this.call('session.retry', { session_id: sessionId, ...options });
  }

  /** `text` in place of turn `turnId`'s prompt: the line goes back to before it, and `text` is submitted. */
  editPrompt(sessionId: string, turnId: string, text: string, options: SubmitOptions = {}): Promise<SubmitResult> {
    this.follow(sessionId);
    return this.call('prompt.edit', { session_id: sessionId, turn_id: turnId, text, ...options });
  }

  /**
   * Submits a prompt; its events come through `events()` (or use `turn()`). A busy session queues it
   * unless `on_busy` says otherwise. Every submit carries a client_message_id: when the connection
   * drops before the answer, the same submit is sent again once reconnected, and the daemon answers
   * `duplicate` instead of running it twice.
   */
  async submit(sessionId: string, text: string, options: SubmitOptions = {}): Promise<SubmitResult> {
    this.follow(sessionId);
    const params = { ...options, session_id: sessionId, text, on_busy: options.on_busy ?? 'queue', client_message_id: options.client_message_id ?? randomUUID() };
    for (let attempt = 1; ; attempt++) {
      const rpc = this.rpc;
      try {
        return await this.call<SubmitResult>('prompt.submit', params);
      } catch (err) {
        if (!(err instanceof ConnectionClosedError) || attempt >= RESUBMIT_ATTEMPTS || !(await this.reconnectedAfter(rpc))) throw err;
      }
    }
  }

  /**
   * With `turn_id`, only that turn (`{applied: false, reason: 'not_current'}` when another one, or
   * none, runs). A stop clears the session's queue unless `keep_queue`.
   */
  interrupt(sessionId: string, options: { turn_id?: string; keep_queue?: boolean } = {}): Promise<{ applied: boolean; reason?: 'not_current' }> {
    return this.call('session.interrupt', { session_id: sessionId, ...options });
  }

  queue(sessionId: string): Promise<QueueState> {
    return this.call('session.queue.get', { session_id: sessionId });
  }

  /** Edits (`text`), deletes, or steers a queued prompt into the running turn; 4041 for an unknown item. */
  updateQueue(sessionId: string, queueId: string, action: QueueAction, text?: string): Promise<{ revision: number }> {
    return this.call('session.queue.update', { session_id: sessionId, queue_id: queueId, action, ...(text === undefined ? {} : { text }) });
  }

  /** A run-concurrent or idle-gated route of the route table, with its params. */
  control(route: ControlRoute, sessionId: string, params: Record<string, unknown> = {}): Promise<ControlResult> {
    return this.call(route, { ...params, session_id: sessionId });
  }

  lockAnswer(requestId: string, questionId: string, answer: string): Promise<LockResult> {
    return this.call('clarify.lock', { request_id: requestId, question_id: questionId, answer });
  }

  answerRequest(requestId: string, result: Record<string, unknown>): Promise<{ status: 'ok' | 'expired' }> {
    return this.call('request.answer', { request_id: requestId, result });
  }

  /** Lets another user view (read only) or edit (drive) a session; its owner's or an admin's to give (PROTOCOL.md §5.6). */
  shareSession(sessionId: string, user: string, role: ShareRole): Promise<{ session_id: string; user: string; role: ShareRole }> {
    return this.call('session.share', { session_id: sessionId, user, role });
  }

  unshareSession(sessionId: string, user: string): Promise<{ session_id: string; user: string; removed: boolean }> {
    return this.call('session.unshare', { session_id: sessionId, user });
  }

  hostStatus(): Promise<HostStatusResult> {
    return this.call('host.status');
  }

  restartHost(): Promise<{ state: HostState }> {
    return this.call('host.restart');
  }

  shutdownDaemon(wait?: number): Promise<{ finalized: number; retained: number }> {
    return this.call('daemon.shutdown', wait === undefined ? {} : { wait });
  }

  // ── events and questions ───────────────────────────────────────────────────────────────────

  /**
   * Every event of the session from now on, across reconnects, until the iterator is returned
   * (a `break`) or the client is closed. Events are queued for a slow consumer, without bound:
   * iterate, or return the iterator.
   */
  events(sessionId: string): AsyncIterableIterator<SessionEvent> {
    const followed = this.follow(sessionId);
    const queue: EventQueue = new EventQueue(() => followed.queues.delete(queue));
    followed.queues.add(queue);
    return queue.iterator();
  }

  /**
   * Submits a prompt and yields that turn's events, through its turn.end or turn.error (a queued
   * prompt's turn comes when its turn runs; a steered one's is the turn that took it).
   */
  async *turn(sessionId: string, text: string, options: SubmitOptions = {}): AsyncGenerator<SessionEvent, void, undefined> {
    const events = this.events(sessionId);
    try {
      const { turn_id } = await this.submit(sessionId, text, options);
      if (turn_id === undefined) return;
      for await (const event of events) {
        yield event;
        if ((event.type === 'turn.end' || event.type === 'turn.error') && event.payload.turn_id === turn_id) return;
      }
    } finally {
      await events.return?.();
    }
  }

  /** Answers `clarify.request`s of the followed sessions; the return value is the answer. */
  onClarify(handler: ClarifyHandler | null): void {
    this.clarifyHandler = handler;
  }

  /** Answers `approval.request`s of the followed sessions. */
  onApproval(handler: ApprovalHandler | null): void {
    this.approvalHandler = handler;
  }

  close(): void {
    this.state = 'closed';
    this.rpc.close();
    for (const followed of this.sessions.values()) for (const queue of followed.queues) queue.end(null);
    this.announce('closed');
  }

  // ── the connection ─────────────────────────────────────────────────────────────────────────

  private async call<T>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    if (this.state === 'closed') throw new ConnectionClosedError('the client is closed');
    try {
      return await this.rpc.call<T>(method, params, this.callTimeoutMs);
    } catch (err) {
      if (err instanceof RpcError) throw err;
      throw new ConnectionClosedError(`${method}: ${(err as Error).message}`);
    }
  }

  private announce(state: ConnectionState): void {
    this.onConnectionState(state);
    for (const waiter of this.stateWaiters) waiter(state);
  }

  /**
   * After a call failed on `rpc`: true once a new connection is up (the followed sessions
   * resumed), false when `rpc` did not drop (a timeout) or the client gave up.
   */
  private reconnectedAfter(rpc: RpcClient): Promise<boolean> {
    if (this.state === 'closed' || (this.rpc === rpc && !rpc.isClosed)) return Promise.resolve(false);
    if (this.rpc !== rpc && this.state === 'connected') return Promise.resolve(true);
    return new Promise((resolve) => {
      const waiter = (state: ConnectionState): void => {
        if (state === 'reconnecting') return;
        this.stateWaiters.delete(waiter);
        resolve(state === 'connected');
      };
      this.stateWaiters.add(waiter);
    });
  }

  private follow(sessionId: string): Followed {
    let followed = this.sessions.get(sessionId);
    if (followed === undefined) {
      followed = { lastSeq: 0, queues: new Set(), held: null };
      this.sessions.set(sessionId, followed);
    }
    return followed;
  }

  private wire(rpc: RpcClient): void {
    rpc.onEvent = (event) => this.onEvent(event);
    rpc.onServerRequest = (request) => void this.onServerRequest(request);
    void rpc.closed.then(() => {
      if (this.rpc === rpc && this.state === 'connected') void this.reconnectAndResume();
    });
  }

  private onEvent(event: EventParams): void {
    const followed = this.sessions.get(event.session_id);
    if (followed === undefined) return;
    if (followed.held !== null) {
      followed.held.push(event as SessionEvent);
      return;
    }
    this.deliver(followed, event as SessionEvent);
  }

  /** In seq order, each once: a replay may repeat what the live stream already gave. */
  private deliver(followed: Followed, event: SessionEvent): void {
    if (typeof event.seq === 'number') {
      if (event.seq <= followed.lastSeq) return;
      followed.lastSeq = event.seq;
    }
    if (event.type === 'request.cancel') this.withdrawals.get(event.payload.id)?.abort();
    for (const queue of followed.queues) queue.push(event);
  }

  private async resumeFrom(sessionId: string, followed: Followed, afterSeq: number): Promise<ResumeResult> {
    followed.held = [];
    try {
      const result = await this.call<ResumeResult>('session.resume', { session_id: sessionId, after_seq: afterSeq });
      if (result.replay === 'partial' && result.first_seq !== undefined) {
        // The daemon restarted (its seqs began again) or no longer kept what was missed.
        followed.lastSeq = result.first_seq - 1;
        const notice: SessionEvent = { type: 'replay.partial', session_id: sessionId, seq: NaN, payload: { first_seq: result.first_seq, missed_after: afterSeq } };
        for (const queue of followed.queues) queue.push(notice);
      }
      return result;
    } finally {
      const held = followed.held ?? [];
      followed.held = null;
      for (const event of held) this.deliver(followed, event);
    }
  }

  private async reconnectAndResume(): Promise<void> {
    if (this.reconnect === null) return this.giveUp(new ConnectionClosedError('the daemon closed the connection'));
    this.state = 'reconnecting';
    this.announce('reconnecting');
    let delayMs = this.reconnect.initialDelayMs;
    for (let attempt = 1; attempt <= this.reconnect.attempts; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      delayMs = Math.min(delayMs * 2, this.reconnect.maxDelayMs);
      if (this.state !== 'reconnecting') return; // closed meanwhile
      let rpc: RpcClient;
      try {
        rpc = await this.reopen();
      } catch {
        continue;
      }
      this.rpc = rpc;
      this.state = 'connected';
      this.wire(rpc);
      try {
        for (const [sessionId, followed] of this.sessions) await this.reattach(sessionId, followed);
      } catch (err) {
        if (err instanceof ConnectionClosedError) return; // dropped again: that drop reconnects
        throw err;
      }
      this.announce('connected');
      return;
    }
    this.giveUp(new ConnectionClosedError(`the daemon did not come back after ${this.reconnect.attempts} attempts`));
  }

  /** A session not stored yet (no turn has run) is simply attached again. */
  private async reattach(sessionId: string, followed: Followed): Promise<void> {
    try {
      await this.resumeFrom(sessionId, followed, followed.lastSeq);
    } catch (err) {
      if (!(err instanceof RpcError) || err.code !== ErrorCodes.sessionNotFound) throw err;
      await this.call('session.create', { session_id: sessionId });
    }
  }

  private giveUp(error: Error): void {
    this.state = 'closed';
    for (const followed of this.sessions.values()) for (const queue of followed.queues) queue.end(error);
    this.announce('closed');
  }

  private async onServerRequest(request: ServerRequest): Promise<void> {
    if (!this.sessions.has(String(request.params['session_id'])) || this.handled.has(request.id)) return;
    const handler = request.method === 'approval.request' ? this.approvalHandler : request.method === 'clarify.request' ? this.clarifyHandler : null;
    if (handler === null) return; // another client, or a later handler, may answer it
    this.handled.add(request.id);
    if (this.handled.size > HANDLED_REQUESTS_KEPT) this.handled.delete(this.handled.values().next().value!);
    const withdrawn = new AbortController();
    this.withdrawals.set(request.id, withdrawn);
    try {
      const result = await this.answerFor(request, withdrawn.signal);
      if (withdrawn.signal.aborted) return;
      if (result === null) this.rpc.respond(request.id, { error: { code: 4000, message: 'declined' } });
      else this.rpc.respond(request.id, { result });
    } catch (err) {
      this.rpc.respond(request.id, { error: { code: 4000, message: `the handler failed: ${(err as Error).message}` } });
    } finally {
      this.withdrawals.delete(request.id);
    }
  }

  private async answerFor(request: ServerRequest, signal: AbortSignal): Promise<Record<string, unknown> | null> {
    const params = { ...request.params, id: request.id } as Record<string, unknown> & { id: string; session_id: string };
    if (request.method === 'approval.request') {
      const approved = await this.approvalHandler!({ ...params, question: String(params['question'] ?? '') }, { signal });
      if (approved === null) return null;
      return typeof approved === 'object' ? { option_id: String(approved.option_id) } : { approved: approved === true };
    }
    const answer = await this.clarifyHandler!(params, { signal });
    if (answer === null) return null;
    return typeof answer === 'string' ? { answer } : { answers: answer };
  }
}
