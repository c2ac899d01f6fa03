// Who a client is (PROTOCOL.md §5.6): the home's owner (its token, the unix socket, the REPL), a
// user of a personal token, or the subject of an identity provider's JWT. Decided once, where the
// client comes in; everything behind the door trusts it.
import { OWNER } from '../../persistence/people.js';

export interface Identity {
  user: string;
  admin: boolean;
  /** How it was proven: a removed user's `token` connections are closed; a JWT's expire with it. */
  via: 'home' | 'token' | 'jwt';
}

/** The home's owner: its token, and everyone who can open the home's sockets (its file modes are that boundary). */
export const HOME_OWNER: Identity = { user: OWNER, admin: true, via: 'home' };
/** Who the retention sweep deletes and archives as (PROTOCOL.md §2.3): in the audit log, the tombstone and the webhook's `deleted_by`. */
export const RETENTION: Identity = { user: 'retention', admin: true, via: 'home' };
