// The client methods of PROTOCOL.md §2. Each checks its params (naming the bad field), then
// answers from the database, the gateway or, through the supervisor, the host.
import { randomBytes } from 'node:crypto';
import type { SessionFlags } from '../../persistence/session-flags.js';
import { EXPORT_FORMAT, ImportError, ImportRefused, parseExport, type ImportPlan } from '../../persistence/session-export.js';
import { SESSION_STATUSES, type ClusterNode, type LeaseView, type Reader } from '../../persistence/reader.js';
import type { SessionStatus } from '../../persistence/store.js';
import { ErrorCodes, RpcError } from '../../protocol/client-rpc.js';
import { FieldError, Fields, type UnknownRecord } from '../../protocol/fields.js';
import type { RequestId } from '../../protocol/rpc.js';
import { ON_BUSY, type QueueOp } from '../../protocol/frames.js';
import { routeClass } from '../host/routes.js';
import { ask, tell, SECOND_MS, type Ref } from '../runtime.js';
import { isSessionMethod, type Cluster } from './peer-links.js';
import type { CallReply, GatewayMsg, HostCall, HostStatus, StopReport, SupervisorMsg } from './supervisor-messages.js';
import { OWNER, SHARE_ROLES, validUserName, type People } from '../../persistence/people.js';
import { budgetMessage, budgetRefusal, parseDay } from '../../persistence/ledger.js';
import { traceContextOf } from '../../protocol/trace-context.js';
import { USAGE_GROUPS } from '../../protocol/usage.js';
import type { SideStore } from '../../persistence/side-store.js';
import type { ScheduleRow } from '../../persistence/schedules.js';
import { firstPlanned, planFrom } from './schedule-plan.js';
import type { Identity } from './identity.js';
import { sessionFolder } from './session-folder.js';
import type { AgentChoices } from './agent-choice.js';
import type { CatalogueView } from '../../agents/catalogue.js';
import { within } from '../../agents/sandbox/bubblewrap.js';
import { ANSWERS, notFound, type SessionAccess } from './session-access.js';

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

/** Longer than any reply timeout in the supervisor, so the supervisor always answers first. */
const CALL_TIMEOUT_MS = 40 * SECOND_MS;
const STOP_TIMEOUT_MS = 5 * 60 * SECOND_MS;
const DEFAULT_STOP_WAIT_SEC = 10;

/** The request's answer; ANSWERED_ELSEWHERE when another actor wrote it (session.resume's gateway). */
export const ANSWERED_ELSEWHERE: unique symbol = Symbol('answered elsewhere');

const QUEUE_ACTIONS: readonly QueueOp[] = ['edit', 'delete', 'steer'];

type Method = (params: Fields, ctx: ClientContext, id: RequestId) => Promise<unknown> | unknown;

/** A method as a client calls it: who it is may do it (authorize), then it runs (invokeMethod). */
export async function callMethod(method: string, params: UnknownRecord, ctx: ClientContext, id: RequestId = null): Promise<unknown> {
  if (!ctx.identity.admin) await authorize(method, params, ctx);
  return invokeMethod(method, params, ctx, id);
}

/**
 * Throws unless the client's identity may call the method on its session (session-access.ts). A
 * node checks before it forwards a method to the session's owner: both read the same store.
 */
export async function authorize(method: string, params: UnknownRecord, ctx: ClientContext): Promise<void> {
  const sid = ANSWERS.has(method) ? await requestSession(params, ctx) : typeof params['session_id'] === 'string' ? params['session_id'] : null;
  await ctx.access.check(ctx.identity, method, sid ?? '');
}

/** The session of the server request a method answers; an unknown request checks as an unknown session. */
async function requestSession(params: UnknownRecord, ctx: ClientContext): Promise<string | null> {
  const requestId = params['request_id'];
  return typeof requestId === 'string' ? sidForRequest(ctx, requestId) : null;
}

export async function invokeMethod(method: string, params: UnknownRecord, ctx: ClientContext, id: RequestId = null): Promise<unknown> {
  const known = Object.hasOwn(METHODS, method) ? METHODS[method] : undefined;
  const cls = routeClass(method);
  // Routes are checked against the table before any I/O.
  if (known === undefined && (cls === undefined || cls === 'turn-path')) throw new RpcError(ErrorCodes.methodNotFound, `method not found: ${method}`);
  if (ctx.peer === true && !isSessionMethod(method)) throw new RpcError(ErrorCodes.forbidden, `forbidden: a node's link may call session methods only, not ${method}`);
  try {
    const result = known ? await known(new Fields(params), ctx, id) : await routeMethod(method, params, ctx);
    recordAudit(method, params, result, ctx);
    return result;
  } catch (err) {
    if (err instanceof FieldError) throw new RpcError(ErrorCodes.invalidParams, `invalid params: ${err.message}`);
    throw err;
  }
}

/** What each audited method is called in the audit log (PROTOCOL.md §5.6); an answer may be an approval or a denial. */
function auditAction(method: string, params: UnknownRecord): string | null {
  switch (method) {
    case 'session.create':
      return 'create';
    case 'session.delete':
      return 'delete';
    case 'session.import':
      return 'import';
    case 'prompt.submit':
      return params['on_busy'] === 'steer' ? 'steer' : 'submit';
    case 'session.interrupt':
      return 'interrupt';
    case 'session.queue.update':
      return 'queue edit';
    case 'clarify.lock':
      return 'answer';
    case 'session.share':
      return 'share';
    case 'session.unshare':
      return 'unshare';
    case 'session.fork':
      return 'fork';
    case 'session.rewind':
      return 'rewind';
    case 'session.retry':
      return 'retry';
    case 'prompt.edit':
      return 'edit';
    default:
      return null;
  }
}

/** The audit record of a method that succeeded, when it is one the audit log keeps (an answer's is answerServerRequest's). */
function recordAudit(method: string, params: UnknownRecord, result: unknown, ctx: ClientContext): void {
  const action = auditAction(method, params);
  if (action === null) return;
  const sid = typeof params['session_id'] === 'string' ? params['session_id'] : (result as { session_id?: string } | null)?.session_id;
  const detail: Record<string, unknown> = {};
  for (const key of ['request_id', 'queue_id', 'turn_id', 'action', 'user', 'role'] as const) if (typeof params[key] === 'string') detail[key] = params[key];
  const turnId = (result as { turn_id?: unknown } | null)?.turn_id;
  if (typeof turnId === 'string') detail['turn_id'] = turnId;
  ctx.audit({ user: ctx.identity.user, action, ...(sid === undefined ? {} : { session_id: sid }), ...(Object.keys(detail).length === 0 ? {} : { detail }) });
}

function callHost(ctx: ClientContext, call: HostCall): Promise<unknown> {
  return askHost(ctx.supervisor, call);
}

/** A call to the host through the supervisor: its value, or its error as an RpcError. */
export async function askHost(supervisor: Ref<SupervisorMsg>, call: HostCall): Promise<unknown> {
  const reply = await ask(supervisor, (replyTo: Ref<CallReply>): SupervisorMsg => ({ kind: 'call', call, replyTo }), CALL_TIMEOUT_MS);
  if (!reply.ok) throw new RpcError(reply.error.code, reply.error.message, reply.error.data);
  return reply.value;
}

function hostStatus(ctx: ClientContext): Promise<HostStatus> {
  return ask(ctx.supervisor, (replyTo: Ref<HostStatus>): SupervisorMsg => ({ kind: 'status', replyTo }), CALL_TIMEOUT_MS);
}

/** What `host.status` says of the store. */
export interface StoreStatus {
  url: string;
  reachable: boolean;
  problem?: string;
}

/**
 * The sessions by status, and whether the store answers: an unreachable one is named, not an
 * error. Reachable means this node can write it, as its host's last heartbeat says, not only read.
 */
async function storeStatus(ctx: ClientContext, writeProblem: string | null): Promise<{ counts: Record<SessionStatus, number>; store: StoreStatus }> {
  const none = { active: 0, retained: 0, finalized: 0 };
  try {
    const reader = await ctx.reader();
    const counts = (await reader?.statusCounts()) ?? none;
    return { counts, store: { url: ctx.storeShown, reachable: writeProblem === null, ...(writeProblem === null ? {} : { problem: writeProblem }) } };
  } catch (err) {
    return { counts: none, store: { url: ctx.storeShown, reachable: false, problem: (err as Error).message } };
  }
}

/** The cluster's nodes as the store has them; none while it cannot be read (`store` says why). */
async function clusterNodes(ctx: ClientContext): Promise<ClusterNode[]> {
  try {
    return (await (await ctx.reader())?.nodes()) ?? [];
  } catch {
    return [];
  }
}

/** The client gets the session's events from now on; a queue waiting for a client may run (PROTOCOL.md §2.1). */
function attach(ctx: ClientContext, sid: string): void {
  // Neither forgets an attachment while the client is connected: a submit need not repeat it.
  if (ctx.attached.has(sid)) return;
  ctx.attached.add(sid);
  tell(ctx.gateway, { kind: 'attach', sid, clientId: ctx.clientId });
  tell(ctx.supervisor, { kind: 'attached', sid });
}

/**
 * As a node, a resume answered here names a session this node does not run a turn of: when
 * another node holds its lease, that node did not answer (a live one is forwarded to), so the
 * answer says so, with the turn the store has as running there. This node takes the session over
 * once no live node holds it, for the client now following it here: a lease in this node's name
 * may be an earlier start's, which nobody renews. Null when alone, or the lease is this node's.
 */
async function ownerElsewhere(ctx: ClientContext, sid: string): Promise<LeaseView | null> {
  if (ctx.cluster === null) return null;
  ctx.cluster.follow(sid);
  const lease = await ctx.cluster.lease(sid).catch(() => null);
  return lease !== null && lease.node_id !== ctx.nodeId ? lease : null;
}

async function knownSession(ctx: ClientContext, sid: string) {
  const session = await (await ctx.reader())?.session(sid);
  if (session === undefined) throw notFound(sid);
  return session;
}

async function openPeople(ctx: ClientContext): Promise<People> {
  return (await openSide(ctx)).people;
}

async function openSide(ctx: ClientContext): Promise<SideStore> {
  const side = await ctx.side();
  if (side === null) throw new RpcError(ErrorCodes.internal, 'the store cannot be written yet');
  return side;
}

/** A schedule as `schedule.list` shows it (PROTOCOL.md §8.1): its plan under its own name. */
export interface ShownSchedule {
  schedule_id: string;
  session_id: string;
  text: string;
  cron?: string;
  every_secs?: number;
  at?: string;
  tz: string;
  catch_up: string;
  on_busy: string;
  next_at: string | null;
  last_at: string | null;
  fires: number;
  skips: number;
  last_skip: string | null;
}

function shownSchedule(row: ScheduleRow): ShownSchedule {
  const plan = row.kind === 'cron' ? { cron: row.spec } : row.kind === 'every' ? { every_secs: Number(row.spec) } : { at: row.spec };
  const at = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  return { schedule_id: row.schedule_id, session_id: row.sid, text: row.text, ...plan, tz: row.tz, catch_up: row.catch_up, on_busy: row.on_busy, next_at: at(row.next_at), last_at: at(row.last_at), fires: row.fires, skips: row.skips, last_skip: row.last_skip };
}

/** A schedule someone may see or change: theirs to know of (as its session is), else as if it did not exist. */
async function knownSchedule(ctx: ClientContext, scheduleId: string, need: 'read' | 'write'): Promise<ScheduleRow> {
  const row = await (await openSide(ctx)).schedules.get(scheduleId);
  const notThere = new RpcError(ErrorCodes.sessionNotFound, `schedule not found: ${scheduleId}`);
  if (row === undefined) throw notThere;
  if (ctx.identity.admin) return row;
  const role = await ctx.access.roleOf(ctx.identity.user, row.sid);
  if (role === null) throw notThere;
  if (need === 'write' && role === 'viewer') throw new RpcError(ErrorCodes.forbidden, `forbidden: ${ctx.identity.user} may only view session ${row.sid}`);
  return row;
}

/**
 * A session a member creates is theirs: its owner row is written before the answer. An id already
 * taken by a session they cannot see is refused, without saying whose it is.
 */
/**
 * The folders admins gave sessions that lie outside every hidden place (AGENT.md §7): visible
 * read-only to every other session's agent, as all of `/` is, so `status` names them.
 */
async function exposedFolders(ctx: ClientContext): Promise<string[]> {
  const folders = (await (await ctx.reader())?.sessionFolders()) ?? [];
  return folders.filter((folder) => !ctx.hiddenPlaces.some((place) => within(folder, place)));
}

/**
 * Archived or pinned, written on the daemon's side connection (never a turn's path); the session's
 * clients hear an archive as an event.
 */
async function markSession(ctx: ClientContext, sid: string, mark: (flags: SessionFlags, sid: string) => Promise<boolean>, result: { archived: boolean } | { pinned: boolean }): Promise<unknown> {
  await knownSession(ctx, sid);
  if (!(await mark((await openSide(ctx)).flags, sid))) throw notFound(sid);
  if ('archived' in result) tell(ctx.gateway, { kind: 'event', sid, type: 'session.archived', payload: { session_id: sid, archived: result.archived } });
  return { session_id: sid, ...result };
}

/** The file checked whole: -32602 naming the first bad line (nothing is imported). */
function importPlan(data: string): ImportPlan {
  try {
    return parseExport(data);
  } catch (err) {
    if (err instanceof ImportError) throw new RpcError(ErrorCodes.invalidParams, `invalid params: ${err.message}`, { line: err.line });
    throw err;
  }
}

/** A deleted session's id is never used again (PROTOCOL.md §2.3): -32602 "deleted". */
async function refuseDeletedId(ctx: ClientContext, sid: string): Promise<void> {
  if ((await (await ctx.reader())?.isDeleted(sid)) === true) throw new RpcError(ErrorCodes.invalidParams, `invalid params: session ${sid} was deleted: its id is not used again`);
}

/** Whether a name is a stored session's id, other than the one being made: its default folder is its own (AGENT.md §7). */
function isStoredSession(ctx: ClientContext, made: string): (name: string) => Promise<boolean> {
  return async (name) => name !== made && (await (await ctx.reader())?.session(name)) !== undefined;
}

async function claimNewSession(ctx: ClientContext, sid: string): Promise<void> {
  if (ctx.identity.user === OWNER) return;
  const exists = (await (await ctx.reader())?.session(sid)) !== undefined;
  const role = exists ? await ctx.access.roleOf(ctx.identity.user, sid) : null;
  if (exists && role !== 'owner' && role !== 'editor' && !ctx.identity.admin) throw new RpcError(ErrorCodes.forbidden, `forbidden: the session id ${sid} is taken`);
  if (exists) return;
  await (await openPeople(ctx)).grant(sid, ctx.identity.user, 'owner');
  ctx.access.forget(sid, ctx.identity.user);
}

/** A prompt for the session's next turn, as prompt.submit sends it (its `on_busy` and `client_message_id` from `p`). */
function submitPrompt(ctx: ClientContext, sid: string, text: string, p: Fields): Promise<unknown> {
  const onBusy = p.optionalOneOf('on_busy', ON_BUSY) ?? 'queue';
  const clientMessageId = p.optionalIdentifier('client_message_id');
  attach(ctx, sid);
  const cwd = ctx.cwds.get(sid);
  // The home's owner is who a turn without `by` was submitted by: its own prompts say nothing more.
  const by = ctx.identity.user === OWNER ? {} : { by: ctx.identity.user };
  // A trace context that is not W3C's is dropped: the turn's span is then a root (PROTOCOL.md §5.8).
  const traceContext = traceContextOf(p.raw('trace_context'));
  const traced = traceContext === null ? {} : { traceContext };
  return callHost(ctx, { op: 'turn', sid, text, onBusy, ...(clientMessageId === undefined ? {} : { clientMessageId }), ...(cwd ? { cwd } : {}), ...by, ...traced });
}

/**
 * A retry or an edit sent again with the same client_message_id (its client reconnected, an AG-UI
 * run repeated) rewinds nothing: its submit answers `duplicate`, as prompt.submit's would.
 */
async function alreadySubmitted(ctx: ClientContext, sid: string, p: Fields): Promise<boolean> {
  const clientMessageId = p.optionalIdentifier('client_message_id');
  return clientMessageId !== undefined && ((await (await ctx.reader())?.submitted(sid, clientMessageId)) ?? false);
}

/**
 * A retry or an edit rewinds before it submits: one by a person over a budget is refused first
 * (PROTOCOL.md §5.7), so that nothing is rewound for a turn that will not start.
 */
async function withinBudget(ctx: ClientContext): Promise<void> {
  if (ctx.identity.user === OWNER) return;
  const over = await (await ctx.side())?.ledger.overBudget(ctx.identity.user);
  if (over) throw new RpcError(ErrorCodes.budgetExceeded, budgetMessage(over), budgetRefusal(over));
}

/** A `YYYY-MM-DD` (a UTC day), or null when absent. */
function optionalDay(p: Fields, name: string): string | null {
  const text = p.optionalString(name);
  if (text === undefined) return null;
  if (parseDay(text) === null) throw new FieldError(`${name} must be a date, YYYY-MM-DD`);
  return text;
}

/** The host's rewind route, as the caller (who superseded the turns it leaves). */
function rewind(ctx: ClientContext, sid: string, point: { to_turn_id: string | null } | { before_turn_id: string | null }): Promise<unknown> {
  attach(ctx, sid);
  return callHost(ctx, { op: 'control', sid, route: 'session.rewind', params: { ...point, by: ctx.identity.user } });
}

/** A run-concurrent or idle-gated route: its params go to the host as the control's params. */
async function routeMethod(route: string, params: UnknownRecord, ctx: ClientContext): Promise<unknown> {
  const sid = new Fields(params).identifier('session_id');
  const { session_id: _sid, ...rest } = params;
  if (route === 'slash.model' && typeof rest['model'] === 'string') await checkModel(ctx, sid, rest['model']);
  return callHost(ctx, { op: 'control', sid, route, params: rest });
}

/** A member's `slash.model` is held to the session's agent's `models` (AGENT.md §8). */
async function checkModel(ctx: ClientContext, sid: string, model: string): Promise<void> {
  if (ctx.identity.admin) return;
  const agent = (await (await ctx.reader())?.session(sid))?.agent ?? ctx.agents.config.defaultAgent;
  const refusal = ctx.agents.modelRefusal(ctx.identity, agent, model);
  if (refusal !== null) throw new RpcError(ErrorCodes.invalidParams, `invalid params: ${refusal}`);
}

/** The catalogue as the caller may use it: a member sees the agents open to members, and the default they would get. */
function agentsFor(view: CatalogueView, ctx: ClientContext): CatalogueView {
  return { ...view, default: ctx.agents.defaultFor(ctx.identity) ?? '', agents: view.agents.filter((agent) => ctx.agents.mayUse(ctx.identity, agent)) };
}

async function sidForRequest(ctx: ClientContext, requestId: string): Promise<string | null> {
  return ask(ctx.gateway, (replyTo: Ref<string | null>): GatewayMsg => ({ kind: 'request-session', requestId, replyTo }), CALL_TIMEOUT_MS);
}

/** A client's answer to a server request, whichever way it came: the first answer wins in the host, and is the one audited. */
export async function answerServerRequest(ctx: ClientContext, requestId: string, answer: { result?: unknown; error?: unknown }): Promise<{ status: string }> {
  const sid = await sidForRequest(ctx, requestId);
  if (sid === null) return { status: 'expired' };
  const frame = answer.error !== undefined ? { jsonrpc: '2.0', id: requestId, error: answer.error } : { jsonrpc: '2.0', id: requestId, result: answer.result ?? {} };
  const outcome = (await callHost(ctx, { op: 'respond', sid, params: { frame, by: ctx.identity.user } })) as { status: string };
  if (outcome.status !== 'ok') return outcome;
  tell(ctx.gateway, { kind: 'request-closed', requestId });
  const approved = (answer.result as { approved?: unknown } | null | undefined)?.approved;
  const action = approved === true ? 'approve' : approved === false ? 'deny' : 'answer';
  ctx.audit({ user: ctx.identity.user, action, session_id: sid, detail: { request_id: requestId } });
  return outcome;
}

/** A session's name in a list: its first prompt's first line, cut; null when it has none (PROTOCOL.md §5.5). */
const TITLE_MAX = 80;
/** A session's title: its first prompt's first line, without the Markdown that marks it (`# Plan` is "Plan"). */
function titleOf(prompt: string | null): string | null {
  const first = prompt?.split('\n').find((l) => l.trim() !== '')?.trim();
  const line = first?.replace(/^(?:#{1,6}\s+|>\s*|[-*+]\s+|\d+[.)]\s+)+/, '').replace(/^([*_`~]+)(.*?)\1$/, '$2').trim();
  if (line === undefined || line === '') return null;
  return line.length <= TITLE_MAX ? line : `${line.slice(0, TITLE_MAX - 1)}…`;
}

async function asyncFilter<T>(items: readonly T[], keep: (item: T) => Promise<boolean>): Promise<T[]> {
  const kept = await Promise.all(items.map(keep));
  return items.filter((_, i) => kept[i]);
}

function sharedUser(p: Fields): string {
  const user = p.identifier('user');
  if (!validUserName(user)) throw new FieldError('user must be a user\'s name (letters, digits and . _ @ + -, at most 64), not the owner');
  return user;
}

const METHODS: Record<string, Method> = {
  /** The session is stored before the answer: from then on it is listed, resumable and survives a restart. */
  async 'session.create'(p, ctx) {
    const sid = p.optionalIdentifier('session_id') ?? `s-${randomBytes(6).toString('hex')}`;
    await refuseDeletedId(ctx, sid);
    const choice = ctx.agents.choose(ctx.identity, p.optionalIdentifier('agent'), p.optionalString('model'));
    const asked = p.optionalString('cwd');
    const cwd = asked ? await sessionFolder(asked, ctx.identity, ctx.workspacesRoot, isStoredSession(ctx, sid)) : undefined;
    await claimNewSession(ctx, sid);
    if (cwd) ctx.cwds.set(sid, cwd);
    const stored = (await callHost(ctx, { op: 'create', sid, ...(cwd ? { cwd } : {}), ...choice })) as { session_key: string };
    attach(ctx, sid);
    return { session_id: sid, session_key: stored.session_key };
  },

  /** The agents the caller may make a session with (AGENT.md §8), with how many sessions each holds live. */
  async 'agents.list'(_p, ctx) {
    return agentsFor((await callHost(ctx, { op: 'agents', reload: false })) as CatalogueView, ctx);
  },

  /** `turnhost agents reload` (admins): the file read and validated again, by the daemon and its host. */
  async 'agents.reload'(_p, ctx) {
    return agentsFor(await ctx.reloadAgents(), ctx);
  },

  /** Answered by the gateway: the answer, the replay and the open requests must not be split by a live event. */
  async 'session.resume'(p, ctx, id) {
    const sid = p.identifier('session_id');
    const afterSeq = p.optionalInteger('after_seq', 0) ?? null;
    const session = await knownSession(ctx, sid);
    const forkedFrom = (await (await ctx.reader())?.forks(sid))?.forked_from ?? null;
    tell(ctx.supervisor, { kind: 'attached', sid });
    const status = await hostStatus(ctx);
    const runningHere = status.running_sids.includes(sid);
    const elsewhere = runningHere ? null : await ownerElsewhere(ctx, sid);
    const result = {
      session_id: sid,
      session_key: session.session_key,
      history_version: session.history_version,
      status: session.status,
      running: runningHere || elsewhere?.running_turn != null,
      agent: session.agent ?? ctx.agents.config.defaultAgent,
      model: session.model,
      ...(elsewhere === null ? {} : { owner: { node_id: elsewhere.node_id, reachable: false } }),
      ...(forkedFrom === null ? {} : { forked_from: forkedFrom }),
    };
    const viewer = !(await ctx.access.mayAnswer(ctx.identity, sid));
    tell(ctx.gateway, { kind: 'resume', sid, clientId: ctx.clientId, rpcId: id, afterSeq, result, ...(viewer ? { viewer } : {}) });
    return ANSWERED_ELSEWHERE;
  },

  async 'session.list'(p, ctx) {
    const status = p.has('status') ? p.oneOf('status', SESSION_STATUSES) : undefined;
    const running = new Set((await hostStatus(ctx)).running_sids);
    const all = (await (await ctx.reader())?.sessions(status, p.optionalBoolean('archived') === true)) ?? [];
    // A member's list is theirs; each names the member's role in it (an admin's: `admin`, who may do anything).
    const theirs = ctx.identity.admin ? null : new Map((await (await openPeople(ctx)).sessionsOf(ctx.identity.user)).map((row) => [row.sid, row.role]));
    const sessions = theirs === null ? all : all.filter((s) => theirs.has(s.session_id));
    return {
      sessions: sessions.map((s) => ({
        session_id: s.session_id,
        session_key: s.session_key,
        status: s.status,
        running: running.has(s.session_id),
        message_count: s.message_count,
        updated_at: s.updated_at,
        agent: s.agent ?? ctx.agents.config.defaultAgent,
        model: s.model,
        archived: s.archived,
        pinned: s.pinned,
        title: titleOf(s.first_prompt),
        role: theirs?.get(s.session_id) ?? 'admin',
        ...(s.forked_from === null ? {} : { forked_from: s.forked_from }),
      })),
    };
  },

  /**
   * Deletes the session (PROTOCOL.md §2.3): its owner or an admin; 4009 while a turn runs unless
   * `interrupt`. The host commits it and tells its clients; then its events are replayed no more.
   */
  async 'session.delete'(p, ctx) {
    const sid = p.identifier('session_id');
    await knownSession(ctx, sid);
    await callHost(ctx, { op: 'delete', sid, interrupt: p.optionalBoolean('interrupt') === true, by: ctx.identity.user });
    tell(ctx.gateway, { kind: 'session-deleted', sid });
    ctx.cwds.delete(sid);
    ctx.attached.delete(sid);
    return { session_id: sid, deleted: true };
  },

  /** The session as a file's lines (PROTOCOL.md §2.3): whoever may read it. */
  async 'session.export'(p, ctx) {
    const sid = p.identifier('session_id');
    const lines = await (await ctx.reader())?.exportSession(sid);
    if (lines === undefined) throw notFound(sid);
    return { session_id: sid, format: EXPORT_FORMAT, lines };
  },

  /**
   * A session file (`data`, its text) as a new session owned by the caller, in one transaction: a
   * bad line refuses it whole, naming the line. Its agent, when this daemon has it and the caller
   * may use it; else the caller's default.
   */
  async 'session.import'(p, ctx) {
    const data = p.raw('data');
    if (typeof data !== 'string') throw new FieldError('data must be a string: the session file\'s text');
    const sid = p.optionalIdentifier('session_id') ?? `s-${randomBytes(6).toString('hex')}`;
    await refuseDeletedId(ctx, sid);
    const plan = importPlan(data);
    const agent = plan.source.agent === null ? undefined : ctx.agents.config.definitions.get(plan.source.agent);
    if (agent === undefined || !ctx.agents.mayUse(ctx.identity, agent)) plan.source.agent = ctx.agents.choose(ctx.identity, undefined, undefined).agent;
    try {
      const owner = ctx.identity.user === OWNER ? null : ctx.identity.user;
      return { ...(await (await openSide(ctx)).importSession(plan, { sid, sessionKey: `sk-${randomBytes(6).toString('hex')}`, owner })), agent: plan.source.agent };
    } catch (err) {
      if (err instanceof ImportRefused) throw new RpcError(ErrorCodes.invalidParams, `invalid params: ${err.message}`);
      throw err;
    }
  },

  'session.archive'(p, ctx) {
    return markSession(ctx, p.identifier('session_id'), (flags, sid) => flags.archive(sid, Date.now()), { archived: true });
  },

  'session.unarchive'(p, ctx) {
    return markSession(ctx, p.identifier('session_id'), (flags, sid) => flags.archive(sid, null), { archived: false });
  },

  'session.pin'(p, ctx) {
    return markSession(ctx, p.identifier('session_id'), (flags, sid) => flags.pin(sid, true), { pinned: true });
  },

  'session.unpin'(p, ctx) {
    return markSession(ctx, p.identifier('session_id'), (flags, sid) => flags.pin(sid, false), { pinned: false });
  },

  /** The owner (or an admin) lets another user view or drive the session. */
  async 'session.share'(p, ctx) {
    const sid = p.identifier('session_id');
    const user = sharedUser(p);
    const role = p.oneOf('role', SHARE_ROLES);
    await knownSession(ctx, sid);
    await (await openPeople(ctx)).grant(sid, user, role);
    ctx.access.forget(sid, user);
    return { session_id: sid, user, role };
  },

  async 'session.unshare'(p, ctx) {
    const sid = p.identifier('session_id');
    const user = sharedUser(p);
    await knownSession(ctx, sid);
    const removed = await (await openPeople(ctx)).revoke(sid, user);
    ctx.access.forget(sid, user);
    return { session_id: sid, user, removed };
  },

  /** A schedule is stored before the answer; the session is made when it does not exist (PROTOCOL.md §8.1). */
  async 'schedule.create'(p, ctx) {
    const sid = p.identifier('session_id');
    const text = p.requiredString('text');
    const plan = planFrom(p);
    const now = Date.now();
    if ((await (await ctx.reader())?.session(sid)) === undefined) await invokeMethod('session.create', { session_id: sid }, ctx);
    const row: ScheduleRow = {
      schedule_id: `sch-${randomBytes(6).toString('hex')}`,
      sid,
      text,
      kind: plan.kind,
      spec: plan.spec,
      tz: plan.tz,
      catch_up: plan.catchUp,
      on_busy: plan.onBusy,
      next_at: firstPlanned(plan, now),
      last_at: null,
      fires: 0,
      skips: 0,
      last_skip: null,
      created_by: ctx.identity.user,
      created_at: now,
    };
    await (await openSide(ctx)).schedules.create(row);
    ctx.scheduled();
    return { schedule_id: row.schedule_id, next_at: row.next_at === null ? null : new Date(row.next_at).toISOString() };
  },

  async 'schedule.list'(p, ctx) {
    const sid = p.optionalIdentifier('session_id');
    const rows = await (await openSide(ctx)).schedules.list(sid);
    const visible = ctx.identity.admin ? rows : await asyncFilter(rows, async (row) => (await ctx.access.roleOf(ctx.identity.user, row.sid)) !== null);
    return { schedules: visible.map(shownSchedule) };
  },

  async 'schedule.delete'(p, ctx) {
    const row = await knownSchedule(ctx, p.identifier('schedule_id'), 'write');
    await (await openSide(ctx)).schedules.delete(row.schedule_id);
    return { deleted: true };
  },

  async 'session.history'(p, ctx) {
    const sid = p.identifier('session_id');
    const limit = p.optionalInteger('limit', 0);
    const all = p.optionalBoolean('all') ?? false;
    const messages = await (await ctx.reader())?.history(sid, { ...(limit === undefined ? {} : { limit }), all });
    if (messages === undefined) throw new RpcError(ErrorCodes.sessionNotFound, `session not found: ${sid}`);
    return { messages };
  },

  async 'prompt.submit'(p, ctx) {
    const sid = p.identifier('session_id');
    const text = p.raw('text');
    if (typeof text !== 'string') throw new FieldError('text must be a string');
    return submitPrompt(ctx, sid, text, p);
  },

  /** A fork (PROTOCOL.md §2.2): made here, in one statement that shares the source's line up to the turn. */
  async 'session.fork'(p, ctx) {
    const source = p.identifier('session_id');
    const sid = p.optionalIdentifier('new_session_id') ?? `s-${randomBytes(6).toString('hex')}`;
    const atTurnId = p.optionalIdentifier('at_turn_id') ?? null;
    const otherAgent = p.optionalIdentifier('agent');
    if (otherAgent !== undefined) ctx.agents.choose(ctx.identity, otherAgent, undefined);
    const asked = p.optionalString('cwd');
    const cwd = asked ? await sessionFolder(asked, ctx.identity, ctx.workspacesRoot, isStoredSession(ctx, sid)) : null;
    const reader = await ctx.reader();
    if ((await reader?.session(source)) === undefined) throw notFound(source);
    if ((await reader?.session(sid)) !== undefined) throw new RpcError(ErrorCodes.invalidParams, `invalid params: the session id ${sid} is taken`);
    await refuseDeletedId(ctx, sid);
    await claimNewSession(ctx, sid);
    const made = await (await openSide(ctx)).fork({ sid, sessionKey: `sk-${randomBytes(6).toString('hex')}`, cwd, source, atTurnId, agent: otherAgent ?? null });
    if (made === null) throw new RpcError(ErrorCodes.invalidParams, atTurnId === null ? `invalid params: session ${source} has no turn that ended to fork at` : `invalid params: turn ${atTurnId} is not in session ${source}'s history`);
    // This node's host takes the fork now: the session is this node's (PROTOCOL.md §2.2).
    await callHost(ctx, { op: 'create', sid });
    attach(ctx, sid);
    return { session_id: sid, forked_from: { session_id: source, turn_id: made.turn_id } };
  },

  async 'session.forks'(p, ctx) {
    const sid = p.identifier('session_id');
    const forks = await (await ctx.reader())?.forks(sid);
    if (forks === undefined) throw notFound(sid);
    return { session_id: sid, ...forks };
  },

  /** What the session's turns spent, each and in all (PROTOCOL.md §5.7), the turns a rewind left included. */
  async 'session.usage'(p, ctx) {
    const sid = p.identifier('session_id');
    if ((await (await ctx.reader())?.session(sid)) === undefined) throw notFound(sid);
    return (await openSide(ctx)).ledger.sessionUsage(sid);
  },

  /** The ledger's totals (GET /v1/usage, `turnhost usage` reads the store itself): a member's own sessions only. */
  async 'usage.report'(p, ctx) {
    const by = p.optionalOneOf('by', USAGE_GROUPS) ?? 'person';
    const since = optionalDay(p, 'since');
    const until = optionalDay(p, 'until');
    const rows = await (await openSide(ctx)).ledger.usage({ by, since, until, ownedBy: ctx.identity.admin ? null : ctx.identity.user });
    return { by, since, until, rows };
  },

  /** The line is cut after `to_turn_id` (null: to the beginning); what it leaves is superseded, never deleted. */
  'session.rewind'(p, ctx) {
    const sid = p.identifier('session_id');
    const to = p.raw('to_turn_id');
    if (to !== null && (typeof to !== 'string' || to === '')) throw new FieldError('to_turn_id must be a turn id, or null (to the beginning)');
    return rewind(ctx, sid, { to_turn_id: to });
  },

  /** Rewinds to before the last turn and submits its prompt again (PROTOCOL.md §2.2). */
  async 'session.retry'(p, ctx) {
    const sid = p.identifier('session_id');
    if (await alreadySubmitted(ctx, sid, p)) return submitPrompt(ctx, sid, '', p);
    await withinBudget(ctx);
    const { prompt } = (await rewind(ctx, sid, { before_turn_id: null })) as { prompt?: string };
    if (prompt === undefined) throw new RpcError(ErrorCodes.invalidParams, 'invalid params: the last turn has no prompt to submit again');
    return submitPrompt(ctx, sid, prompt, p);
  },

  /** Rewinds to before `turn_id` and submits `text` in its place (PROTOCOL.md §2.2). */
  async 'prompt.edit'(p, ctx) {
    const sid = p.identifier('session_id');
    const turnId = p.identifier('turn_id');
    const text = p.raw('text');
    if (typeof text !== 'string') throw new FieldError('text must be a string');
    if (!(await alreadySubmitted(ctx, sid, p))) {
      await withinBudget(ctx);
      await rewind(ctx, sid, { before_turn_id: turnId });
    }
    return submitPrompt(ctx, sid, text, p);
  },

  /** With `turn_id`, only that turn: a stop pressed as one turn ends never hits the next. A stop clears the queue unless `keep_queue`. */
  'session.interrupt'(p, ctx) {
    const turnId = p.optionalIdentifier('turn_id');
    const keepQueue = p.optionalBoolean('keep_queue') ?? false;
    return callHost(ctx, { op: 'interrupt', sid: p.identifier('session_id'), keepQueue, ...(turnId === undefined ? {} : { turnId }) });
  },

  'session.queue.get'(p, ctx) {
    return callHost(ctx, { op: 'queue', sid: p.identifier('session_id'), queueOp: 'get' });
  },

  async 'session.queue.update'(p, ctx) {
    const sid = p.identifier('session_id');
    const queueId = p.identifier('queue_id');
    const action = p.oneOf('action', QUEUE_ACTIONS);
    const text = action === 'edit' ? p.raw('text') : undefined;
    if (action === 'edit' && typeof text !== 'string') throw new FieldError('text must be a string');
    const result = (await callHost(ctx, { op: 'queue', sid, queueOp: action, queueId, ...(text === undefined ? {} : { text: text as string }) })) as { revision: number };
    return { revision: result.revision };
  },

  async 'clarify.lock'(p, ctx) {
    const requestId = p.identifier('request_id');
    const questionId = p.identifier('question_id');
    const raw = p.raw('answer');
    const answer = typeof raw === 'string' ? raw : JSON.stringify(raw ?? null);
    const sid = await sidForRequest(ctx, requestId);
    if (sid === null) return { status: 'expired' };
    const result = (await callHost(ctx, { op: 'respond', sid, params: { lock: { request_id: requestId, question_id: questionId, answer }, by: ctx.identity.user } })) as { remaining?: unknown[] };
    if (Array.isArray(result.remaining) && result.remaining.length === 0) tell(ctx.gateway, { kind: 'request-closed', requestId });
    return result;
  },

  'request.answer'(p, ctx) {
    return answerServerRequest(ctx, p.identifier('request_id'), { result: p.raw('result') });
  },

  async 'host.status'(_p, ctx) {
    const status = await hostStatus(ctx);
    const { counts, store } = await storeStatus(ctx, status.host.store_problem);
    const url = ctx.edgeUrl();
    return {
      supervisor: status.supervisor,
      host: status.host,
      sandbox: status.sandbox === null || status.sandbox.mode !== 'required' ? status.sandbox : { ...status.sandbox, mechanism: status.sandbox.mechanism ?? (await ctx.sandboxMechanism()), exposed: await exposedFolders(ctx) },
      store,
      ...(ctx.nodeId === null ? {} : { cluster: { node_id: ctx.nodeId, nodes: await clusterNodes(ctx) } }),
      sessions: { active: counts.active, running: status.running_sids.length, retained: counts.retained, finalized: counts.finalized },
      ...(url === null ? {} : { http: { url } }),
      you: { user: ctx.identity.user, admin: ctx.identity.admin },
    };
  },

  'host.restart'(_p, ctx) {
    return ask(ctx.supervisor, (replyTo: Ref<{ state: string }>): SupervisorMsg => ({ kind: 'restart', replyTo }), CALL_TIMEOUT_MS);
  },

  'daemon.shutdown'(p, ctx) {
    const waitSec = p.optionalNumber('wait', 0) ?? DEFAULT_STOP_WAIT_SEC;
    return ask(ctx.supervisor, (replyTo: Ref<StopReport>): SupervisorMsg => ({ kind: 'stop', waitSec, replyTo }), STOP_TIMEOUT_MS);
  },
};

