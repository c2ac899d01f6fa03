// Who may do what to a session (PROTOCOL.md §5.6), decided before a method runs or is forwarded to
// another node: an admin anything; a member only what they own or was shared with them, anything
// else answered as if the session did not exist; a viewer reads and does nothing else. The home's
// owner (the unix socket, the home's token) is an admin, so its path does no lookup at all.
import { OWNER, type People, type SessionRole } from '../../persistence/people.js';
import { ErrorCodes, RpcError } from '../../protocol/client-rpc.js';
import type { Identity } from './identity.js';
import { routeClass } from '../host/routes.js';

/** What a method does to its session. */
type Need = 'read' | 'write' | 'share';

// A fork reads its source (PROTOCOL.md §2.2): a viewer who forks gets a session of their own.
const READS = new Set(['session.resume', 'session.history', 'session.queue.get', 'session.fork', 'session.forks', 'session.usage', 'session.export', 'blob.get']);
const WRITES = new Set(['prompt.submit', 'session.interrupt', 'session.queue.update', 'schedule.create', 'session.rewind', 'session.retry', 'prompt.edit', 'session.archive', 'session.unarchive', 'session.pin', 'session.unpin']);
/** The owner's (and an admin's) alone: who may see it, and whether it is kept (PROTOCOL.md §2.3). */
const SHARES = new Set(['session.share', 'session.unshare', 'session.delete']);
/** Methods that name a server request: the request's session is checked. */
export const ANSWERS = new Set(['request.answer', 'clarify.lock']);
/** The daemon's own levers: admins only. */
const ADMIN_ONLY = new Set(['host.restart', 'daemon.shutdown', 'agents.reload']);

/**
 * A member's role in a session is looked up at most this often: an unshare made on another node
 * holds here within it. No role is not kept: a share made elsewhere holds here at once.
 */
const ROLE_TTL_MS = 1000;
const ROLES_KEPT = 10_000;

export function needOf(method: string): Need | null {
  if (READS.has(method)) return 'read';
  if (WRITES.has(method) || ANSWERS.has(method) || routeClass(method) !== undefined) return 'write';
  if (SHARES.has(method)) return 'share';
  return null;
}

export function notFound(sid: string): RpcError {
  return new RpcError(ErrorCodes.sessionNotFound, `session not found: ${sid}`);
}

function forbidden(message: string): RpcError {
  return new RpcError(ErrorCodes.forbidden, `forbidden: ${message}`);
}

/** Members' roles in sessions, read from the store's people and kept a second. */
export class SessionAccess {
  private readonly roles = new Map<string, { role: SessionRole; atMs: number }>();

  constructor(private readonly people: () => Promise<People | null>) {}

  /** Throws 4004 (the session is not theirs to know of), or 4003 (a viewer's write; a share by a non-owner). */
  async check(identity: Identity, method: string, sid: string): Promise<void> {
    if (ADMIN_ONLY.has(method) && !identity.admin) throw forbidden(`${method} is for admins`);
    const need = needOf(method);
    if (identity.admin || need === null) return;
    const role = await this.roleOf(identity.user, sid);
    if (role === null) throw notFound(sid);
    if (need === 'write' && role === 'viewer') throw forbidden(`${identity.user} may only view session ${sid}`);
    if (need === 'share' && role !== 'owner') throw forbidden(`only the session's owner or an admin may ${method === 'session.delete' ? 'delete' : 'share'} session ${sid}`);
  }

  /** Whether the user may answer the session's server requests (its owner, an editor, an admin). */
  async mayAnswer(identity: Identity, sid: string): Promise<boolean> {
    if (identity.admin) return true;
    const role = await this.roleOf(identity.user, sid);
    return role === 'owner' || role === 'editor';
  }

  async roleOf(user: string, sid: string): Promise<SessionRole | null> {
    const key = `${sid}\n${user}`;
    const kept = this.roles.get(key);
    if (kept !== undefined && Date.now() - kept.atMs < ROLE_TTL_MS) return kept.role;
    const rows = (await (await this.people())?.accessOf(sid)) ?? [];
    const role = rows.find((row) => row.user_name === user)?.role ?? (rows.length === 0 && user === OWNER ? 'owner' : null);
    this.roles.delete(key);
    if (role === null) return null;
    this.roles.set(key, { role, atMs: Date.now() });
    if (this.roles.size > ROLES_KEPT) this.roles.delete(this.roles.keys().next().value!);
    return role;
  }

  /** A change made here holds here at once (elsewhere within ROLE_TTL_MS). */
  forget(sid: string, user: string): void {
    this.roles.delete(`${sid}\n${user}`);
  }
}
