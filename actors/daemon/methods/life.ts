// A session's life (PROTOCOL.md §2.3): delete it, export it as a file and import one, archive and
// pin it. Marks are written on the daemon's side connection, never on a turn's path.
import type { SessionFlags } from '../../../persistence/session-flags.js';
import { EXPORT_FORMAT, ImportError, ImportRefused, parseExport, type ImportPlan } from '../../../persistence/session-export.js';
import { OWNER } from '../../../persistence/people.js';
import { ErrorCodes, RpcError } from '../../../protocol/client-rpc.js';
import { FieldError } from '../../../protocol/fields.js';
import { tell } from '../../runtime.js';
import type { ClientContext } from '../client-context.js';
import { notFound } from '../session-access.js';
import { callHost } from './host-calls.js';
import type { MethodTable } from './method-table.js';
import { knownSession, newSessionId, newSessionKey, openSide, refuseDeletedId } from './stored-sessions.js';

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

/** A session's life: deleted, exported, imported, archived, pinned. */
export const LIFE_METHODS: MethodTable = {

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
    const sid = p.optionalIdentifier('session_id') ?? newSessionId();
    await refuseDeletedId(ctx, sid);
    const plan = importPlan(data);
    const agent = plan.source.agent === null ? undefined : ctx.agents.config.definitions.get(plan.source.agent);
    if (agent === undefined || !ctx.agents.mayUse(ctx.identity, agent)) plan.source.agent = ctx.agents.choose(ctx.identity, undefined, undefined).agent;
    try {
      const owner = ctx.identity.user === OWNER ? null : ctx.identity.user;
      return { ...(await (await openSide(ctx)).importSession(plan, { sid, sessionKey: newSessionKey(), owner })), agent: plan.source.agent };
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
};
