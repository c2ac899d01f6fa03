// The methods of a session's turns (PROTOCOL.md §2, §2.1): make, list and resume sessions, read
// their history, submit prompts, stop a turn, and see and change the queue.
import { SESSION_STATUSES, type LeaseView } from '../../../persistence/reader.js';
import { OWNER } from '../../../persistence/people.js';
import { ErrorCodes, RpcError } from '../../../protocol/client-rpc.js';
import { FieldError, type Fields } from '../../../protocol/fields.js';
import { ON_BUSY, type QueueOp } from '../../../protocol/frames.js';
import { traceContextOf } from '../../../protocol/trace-context.js';
import { tell } from '../../runtime.js';
import type { ClientContext } from '../client-context.js';
import { sessionFolder } from '../session-folder.js';
import { promptContent, type PromptContent } from './content.js';
import { attach, callHost, hostStatus } from './host-calls.js';
import { ANSWERED_ELSEWHERE, type MethodTable } from './method-table.js';
import { claimNewSession, isStoredSession, knownSession, newSessionId, openPeople, refuseDeletedId } from './stored-sessions.js';

const QUEUE_ACTIONS: readonly QueueOp[] = ['edit', 'delete', 'steer'];

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

/** A prompt for the session's next turn, as prompt.submit sends it (its `on_busy` and `client_message_id` from `p`). */
export function submitPrompt(ctx: ClientContext, sid: string, prompt: string | PromptContent, p: Fields): Promise<unknown> {
  const { text, content } = typeof prompt === 'string' ? { text: prompt, content: undefined } : prompt;
  const onBusy = p.optionalOneOf('on_busy', ON_BUSY) ?? 'queue';
  const clientMessageId = p.optionalIdentifier('client_message_id');
  attach(ctx, sid);
  const cwd = ctx.cwds.get(sid);
  // The home's owner is who a turn without `by` was submitted by: its own prompts say nothing more.
  const by = ctx.identity.user === OWNER ? {} : { by: ctx.identity.user };
  // A trace context that is not W3C's is dropped: the turn's span is then a root (PROTOCOL.md §5.8).
  const traceContext = traceContextOf(p.raw('trace_context'));
  const traced = traceContext === null ? {} : { traceContext };
  return callHost(ctx, { op: 'turn', sid, text, ...(content === undefined ? {} : { content }), onBusy, ...(clientMessageId === undefined ? {} : { clientMessageId }), ...(cwd ? { cwd } : {}), ...by, ...traced });
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

/** A session's turns: made, listed, resumed, prompted, stopped, queued. */
export const SESSION_METHODS: MethodTable = {
  /** The session is stored before the answer: from then on it is listed, resumable and survives a restart. */
  async 'session.create'(p, ctx) {
    const sid = p.optionalIdentifier('session_id') ?? newSessionId();
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
    return submitPrompt(ctx, sid, await promptContent(ctx, sid, p), p);
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
};
