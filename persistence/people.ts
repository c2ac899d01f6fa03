// People (PROTOCOL.md §5.6) as the store keeps them: the users of personal tokens (a SHA-256 of
// each token, never the token) and who may see or drive each session. The daemon and the CLI read
// and write these rows on the store's side connection (side-store.ts), beside the host's: they
// change when someone is added, removed or shared with, never on a turn's path. Every node of a
// cluster reads the same.
import { createHash, randomBytes } from 'node:crypto';

/** The name of the home's owner: the home's token, the unix socket and the REPL. */
export const OWNER = 'owner';
export const SHARE_ROLES = ['viewer', 'editor'] as const;
export type ShareRole = (typeof SHARE_ROLES)[number];
export type SessionRole = 'owner' | ShareRole;

export interface UserRow {
  name: string;
  admin: boolean;
  token_sha256: string;
  created_at: number;
  last_seen_at: number | null;
}

export interface AccessRow {
  user_name: string;
  role: SessionRole;
}

export interface People {
  users(): Promise<UserRow[]>;
  /** False when the name is taken. */
  addUser(user: Omit<UserRow, 'last_seen_at'>): Promise<boolean>;
  /** False when there was no such user. Their sessions stay (an admin still sees them). */
  removeUser(name: string): Promise<boolean>;
  touchUser(name: string, at: number): Promise<void>;
  /** Who may see the session, and as what; none: it belongs to the home's owner. */
  accessOf(sid: string): Promise<AccessRow[]>;
  /** The sessions a user owns or was shared, with their role in each. */
  sessionsOf(user: string): Promise<{ sid: string; role: SessionRole }[]>;
  grant(sid: string, user: string, role: SessionRole): Promise<void>;
  /** False when the user had no share of it. */
  revoke(sid: string, user: string): Promise<boolean>;
}

/** A personal token: 32 random bytes, base64url, as the home's token. */
export function newPersonalToken(): string {
  return randomBytes(32).toString('base64url');
}

export function tokenDigest(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** A user's name: what an audit record, a share and `by` say; printable, no spaces, 1–64 characters. */
export function validUserName(name: string): boolean {
  return /^[A-Za-z0-9._@+-]{1,64}$/.test(name) && name !== OWNER;
}
