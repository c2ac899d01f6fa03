// Who may come in (PROTOCOL.md §5.1, §5.6), decided once per request before any route: the home's
// token, a personal token or a JWT as a bearer header, or a page login's cookie; the Host header
// against DNS rebinding; the Origin of a write or an upgrade. Nothing here ever logs or returns a
// token or a cookie.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { HOME_OWNER, type Identity } from '../actors/daemon/identity.js';
import type { UserDirectory } from '../actors/daemon/user-directory.js';
import type { TokenSource } from './http-token.js';
import type { JwtVerifier } from './jwt-verifier.js';
import { takeLoginCode } from './login-codes.js';

/** The login cookie is named after the edge's port: two daemons on one host do not log each other out (cookies ignore ports). */
export const COOKIE_PREFIX = 'turnhost_session_';
export const DEFAULT_LOGIN_DAYS = 7;
const DAY_MS = 24 * 60 * 60 * 1000;
/** Page logins kept at once; past this the oldest is forgotten (its page logs in again). */
const LOGINS_MAX = 1000;
const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]'];

export interface AccessOptions {
  tokens: TokenSource;
  /** Bound to a loopback address: only loopback names (and `allowHosts`) may be in `Host`. */
  loopback: boolean;
  port: () => number;
  allowHosts: readonly string[];
  corsOrigins: readonly string[];
  secureCookie: boolean;
  /** A page login ends this long after it was made. */
  loginDays: number;
  /** Where single-use login codes are kept (login-codes.ts). */
  home: string;
  /** The users of personal tokens. */
  users: UserDirectory;
  /** Set when the daemon takes an identity provider's JWTs. */
  jwt: JwtVerifier | null;
}

/** Who came in, and until when their credential holds (a JWT's expiry; never for a token). */
export type Admitted = Identity & { expiresAtMs?: number };

/** A page login: whose, made with which credential (a digest of it), when. */
interface Login {
  identity: Admitted;
  credential: string;
  madeMs: number;
}

export type Refusal = { status: 401 | 403; message: string };

export class Access {
  /** Login cookie → whose it is (a rotated token or a removed user ends the logins made with the old credential). */
  private readonly logins = new Map<string, Login>();

  constructor(private readonly options: AccessOptions) {}

  /** 403 for a Host that a rebinding attack would send; null when it is one of ours. */
  checkHost(req: IncomingMessage): Refusal | null {
    if (!this.options.loopback && this.options.allowHosts.length === 0) return null;
    const host = (req.headers.host ?? '').toLowerCase();
    const port = this.options.port();
    const allowed = [...(this.options.loopback ? LOOPBACK_NAMES : []), ...this.options.allowHosts.map((h) => h.toLowerCase())];
    if (allowed.some((name) => host === name || host === `${name}:${port}`)) return null;
    return { status: 403, message: 'this Host is not served here (add it with --allow-host)' };
  }

  /** A write or an upgrade from a page of another origin is refused; without Origin (curl, a gateway) it is not a browser's. */
  checkOrigin(req: IncomingMessage): Refusal | null {
    const origin = req.headers.origin;
    if (origin === undefined || this.allowedOrigin(req, origin)) return null;
    return { status: 403, message: 'this Origin may not write here (add it with --cors-origin)' };
  }

  /** The origin CORS headers may name: one given with --cors-origin. */
  corsOrigin(req: IncomingMessage): string | null {
    const origin = req.headers.origin;
    return origin !== undefined && this.options.corsOrigins.includes(origin) ? origin : null;
  }

  /** Who the request is, from its bearer header or its login cookie; null: nobody we know. */
  async identify(req: IncomingMessage): Promise<Admitted | null> {
    const header = req.headers.authorization;
    if (header !== undefined && header.startsWith('Bearer ')) return this.identifyToken(header.slice('Bearer '.length).trim());
    const login = cookieValue(req.headers.cookie, this.cookieName());
    return login === null ? null : this.loginIdentity(login);
  }

  /** The home's token is the owner; a JWT (three dotted parts) goes to the provider's keys; any other, to the users. */
  async identifyToken(candidate: string): Promise<Admitted | null> {
    if (sameSecret(candidate, this.options.tokens.current())) return HOME_OWNER;
    if (candidate.includes('.')) return this.options.jwt === null ? null : this.options.jwt.identify(candidate);
    return this.options.users.identify(candidate);
  }

  /** The home's token now: a login with a single-use code holds while it does. */
  homeToken(): string {
    return this.options.tokens.current();
  }

  /** A page login: an opaque id for the cookie, never the token itself. */
  login(identity: Admitted, credential: string): string {
    const id = randomBytes(24).toString('base64url');
    this.logins.set(id, { identity, credential: digest(credential), madeMs: Date.now() });
    if (this.logins.size > LOGINS_MAX) this.logins.delete(this.logins.keys().next().value!);
    return id;
  }

  loginCookie(id: string): string {
    const maxAge = Math.round((this.options.loginDays * DAY_MS) / 1000);
    return `${this.cookieName()}=${id}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${maxAge}${this.options.secureCookie ? '; Secure' : ''}`;
  }

  /** A login code that `turnhost web --open` made, once, within its minute (login-codes.ts). */
  takeLoginCode(code: string): boolean {
    return takeLoginCode(this.options.home, code);
  }

  private cookieName(): string {
    return `${COOKIE_PREFIX}${this.options.port()}`;
  }

  private loginIdentity(id: string): Admitted | null {
    const made = this.logins.get(id);
    if (made === undefined) return null;
    const now = Date.now();
    if (now - made.madeMs > this.options.loginDays * DAY_MS || (made.identity.expiresAtMs !== undefined && now > made.identity.expiresAtMs)) {
      this.logins.delete(id);
      return null;
    }
    return this.stillHolds(made) ? made.identity : null;
  }

  /** The owner's login holds while the home's token is the one it was made with; a user's, while the user is. */
  private stillHolds(login: Login): boolean {
    switch (login.identity.via) {
      case 'home':
        return login.credential === digest(this.options.tokens.current());
      case 'token':
        return this.options.users.identifyDigest(login.credential) !== null;
      case 'jwt':
        return true;
    }
  }

  private allowedOrigin(req: IncomingMessage, origin: string): boolean {
    if (this.options.corsOrigins.includes(origin)) return true;
    const host = req.headers.host;
    return host !== undefined && (origin === `http://${host}` || origin === `https://${host}`);
  }
}

/** Compares digests, so the time taken says nothing of where two secrets differ, nor of the length. */
function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}

function digest(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

export function cookieValue(header: string | undefined, name: string): string | null {
  if (header === undefined) return null;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq !== -1 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}
