// What methods check of a session in the store before they act on it, and how a new one is named
// and claimed (PROTOCOL.md §2.3, §5.6).
import { randomBytes } from 'node:crypto';
import { OWNER, type People } from '../../../persistence/people.js';
import type { SideStore } from '../../../persistence/side-store.js';
import { ErrorCodes, RpcError } from '../../../protocol/client-rpc.js';
import { notFound } from '../session-access.js';
import type { ClientContext } from '../client-context.js';

/** A session id made up for a session the client did not name. */
export function newSessionId(): string {
  return `s-${randomBytes(6).toString('hex')}`;
}

/** A new session's key (its history's identity across runs, PROTOCOL.md §1). */
export function newSessionKey(): string {
  return `sk-${randomBytes(6).toString('hex')}`;
}

export async function knownSession(ctx: ClientContext, sid: string) {
  const session = await (await ctx.reader())?.session(sid);
  if (session === undefined) throw notFound(sid);
  return session;
}

export async function openPeople(ctx: ClientContext): Promise<People> {
  return (await openSide(ctx)).people;
}

export async function openSide(ctx: ClientContext): Promise<SideStore> {
  const side = await ctx.side();
  if (side === null) throw new RpcError(ErrorCodes.internal, 'the store cannot be written yet');
  return side;
}

/** A deleted session's id is never used again (PROTOCOL.md §2.3): -32602 "deleted". */
export async function refuseDeletedId(ctx: ClientContext, sid: string): Promise<void> {
  if ((await (await ctx.reader())?.isDeleted(sid)) === true) throw new RpcError(ErrorCodes.invalidParams, `invalid params: session ${sid} was deleted: its id is not used again`);
}

/** Whether a name is a stored session's id, other than the one being made: its default folder is its own (AGENT.md §7). */
export function isStoredSession(ctx: ClientContext, made: string): (name: string) => Promise<boolean> {
  return async (name) => name !== made && (await (await ctx.reader())?.session(name)) !== undefined;
}

/**
 * A session a member creates is theirs: its owner row is written before the answer. An id already
 * taken by a session they cannot see is refused, without saying whose it is.
 */
export async function claimNewSession(ctx: ClientContext, sid: string): Promise<void> {
  if (ctx.identity.user === OWNER) return;
  const exists = (await (await ctx.reader())?.session(sid)) !== undefined;
  const role = exists ? await ctx.access.roleOf(ctx.identity.user, sid) : null;
  if (exists && role !== 'owner' && role !== 'editor' && !ctx.identity.admin) throw new RpcError(ErrorCodes.forbidden, `forbidden: the session id ${sid} is taken`);
  if (exists) return;
  await (await openPeople(ctx)).grant(sid, ctx.identity.user, 'owner');
  ctx.access.forget(sid, ctx.identity.user);
}
