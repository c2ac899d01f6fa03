// Who may come in (PROTOCOL.md §5.1), decided once per request before any route: the token as a
// bearer header or a page login's cookie, the Host header against DNS rebinding, the Origin of a
// write or an upgrade. Nothing here ever logs or returns a token or a cookie.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { TokenSource } from './http-token.js';

export const COOKIE_NAME = 'turnhost_session';
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
}

export type Refusal = { status: 401 | 403; message: string };

export class Access {
  /** Login cookie → a digest of the token it was made with: a rotated token ends the logins made with the old one. */
  private readonly logins = new Map<string, string>();

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

  authenticated(req: IncomingMessage): boolean {
    const header = req.headers.authorization;
    if (header !== undefined && header.startsWith('Bearer ')) return this.isToken(header.slice('Bearer '.length).trim());
    const login = cookieValue(req.headers.cookie, COOKIE_NAME);
    return login !== null && this.isLogin(login);
  }

  isToken(candidate: string): boolean {
    return sameSecret(candidate, this.options.tokens.current());
  }

  /** A page login: an opaque id for the cookie, never the token itself. */
  login(): string {
    const id = randomBytes(24).toString('base64url');
    this.logins.set(id, digest(this.options.tokens.current()));
    if (this.logins.size > LOGINS_MAX) this.logins.delete(this.logins.keys().next().value!);
    return id;
  }

  loginCookie(id: string): string {
    return `${COOKIE_NAME}=${id}; HttpOnly; SameSite=Strict; Path=/${this.options.secureCookie ? '; Secure' : ''}`;
  }

  private isLogin(id: string): boolean {
    const made = this.logins.get(id);
    return made !== undefined && made === digest(this.options.tokens.current());
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
