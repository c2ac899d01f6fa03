// A session's branches (PROTOCOL.md §2.2): fork it, list its forks, rewind it, retry its last turn
// or edit a past prompt. A rewind supersedes turns and deletes nothing.
import { OWNER } from '../../../persistence/people.js';
import { budgetMessage, budgetRefusal } from '../../../persistence/ledger.js';
import { ErrorCodes, RpcError } from '../../../protocol/client-rpc.js';
import { FieldError, type Fields } from '../../../protocol/fields.js';
import type { ClientContext } from '../client-context.js';
import { sessionFolder } from '../session-folder.js';
import { notFound } from '../session-access.js';
import { attach, callHost } from './host-calls.js';
import type { MethodTable } from './method-table.js';
import { promptContent } from './content.js';
import { submitPrompt } from './sessions.js';
import { storedBlocks } from '../../../protocol/content.js';
import { claimNewSession, isStoredSession, newSessionId, newSessionKey, openSide, refuseDeletedId } from './stored-sessions.js';

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

/** The host's rewind route, as the caller (who superseded the turns it leaves). */
function rewind(ctx: ClientContext, sid: string, point: { to_turn_id: string | null } | { before_turn_id: string | null }): Promise<unknown> {
  attach(ctx, sid);
  return callHost(ctx, { op: 'control', sid, route: 'session.rewind', params: { ...point, by: ctx.identity.user } });
}

/** A session's line: forks, rewinds, retries and edits. */
export const BRANCH_METHODS: MethodTable = {

  /** A fork (PROTOCOL.md §2.2): made here, in one statement that shares the source's line up to the turn. */
  async 'session.fork'(p, ctx) {
    const source = p.identifier('session_id');
    const sid = p.optionalIdentifier('new_session_id') ?? newSessionId();
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
    const made = await (await openSide(ctx)).fork({ sid, sessionKey: newSessionKey(), cwd, source, atTurnId, agent: otherAgent ?? null });
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
    const { prompt, content } = (await rewind(ctx, sid, { before_turn_id: null })) as { prompt?: string; content?: unknown };
    if (prompt === undefined) throw new RpcError(ErrorCodes.invalidParams, 'invalid params: the last turn has no prompt to submit again');
    // Its files go again as the session names them: a retry stores nothing new.
    return submitPrompt(ctx, sid, content === undefined ? prompt : { text: prompt, content: storedBlocks(content) }, p);
  },


  /**
   * Rewinds to before `turn_id` and submits `text` and/or `content` in its place (PROTOCOL.md §2.2,
   * §2.4): the new prompt is checked (its files stored) before anything is rewound.
   */
  async 'prompt.edit'(p, ctx) {
    const sid = p.identifier('session_id');
    const turnId = p.identifier('turn_id');
    const prompt = await promptContent(ctx, sid, p);
    if (!(await alreadySubmitted(ctx, sid, p))) {
      await withinBudget(ctx);
      await rewind(ctx, sid, { before_turn_id: turnId });
    }
    return submitPrompt(ctx, sid, prompt, p);
  },
};
