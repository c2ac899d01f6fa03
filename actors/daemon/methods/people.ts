// Who else may see or drive a session (PROTOCOL.md §5.6): its owner (or an admin) shares it with a
// viewer or an editor, and takes a share back.
import { SHARE_ROLES, validUserName } from '../../../persistence/people.js';
import { FieldError, type Fields } from '../../../protocol/fields.js';
import type { MethodTable } from './method-table.js';
import { knownSession, openPeople } from './stored-sessions.js';

function sharedUser(p: Fields): string {
  const user = p.identifier('user');
  if (!validUserName(user)) throw new FieldError('user must be a user\'s name (letters, digits and . _ @ + -, at most 64), not the owner');
  return user;
}

/** A session's shares. */
export const PEOPLE_METHODS: MethodTable = {

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
};
