// JWTs from an identity provider (PROTOCOL.md §5.6), verified with `jose` against the provider's
// key set: fetched and cached as jose's remote key set does (a token with a key id it has not seen
// fetches the set again, once per cooldown), or read once from a file. Only asymmetric algorithms
// are accepted, so neither `none` nor an HMAC keyed with a public key can pass; `exp` is required.
// A token that verified is kept until its expiry (at most VERIFIED_KEPT of them): a REST client
// sends the same JWT on every request, and a signature check costs a quarter of a millisecond.
import { readFileSync } from 'node:fs';
import { createLocalJWKSet, createRemoteJWKSet, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import type { Identity } from '../actors/daemon/identity.js';
import { validUserName } from '../persistence/people.js';

const ALGORITHMS = ['RS256', 'ES256', 'EdDSA'];
const CLOCK_LEEWAY_S = 60;
const JWKS_FETCH_TIMEOUT_MS = 5000;
const VERIFIED_KEPT = 1000;

type JwtIdentity = Identity & { expiresAtMs: number };

export interface JwtOptions {
  /** The provider's key set: a URL (its jwks_uri) or a file. */
  jwks: { url: string } | { file: string };
  issuer?: string | undefined;
  audience?: string | undefined;
  /** The claim that names the user (default `sub`). */
  userClaim?: string | undefined;
  /** The claim that, when true, makes the user an admin (default `turnhost_admin`). */
  adminClaim?: string | undefined;
}

export class JwtVerifier {
  private readonly keys: JWTVerifyGetKey;
  private readonly verified = new Map<string, JwtIdentity>();

  constructor(private readonly options: JwtOptions) {
    this.keys =
      'url' in options.jwks
        ? createRemoteJWKSet(new URL(options.jwks.url), { timeoutDuration: JWKS_FETCH_TIMEOUT_MS })
        : createLocalJWKSet(JSON.parse(readFileSync(options.jwks.file, 'utf8')) as Parameters<typeof createLocalJWKSet>[0]);
  }

  /** The token's user, or null for any token that does not verify (the reason is not told to the caller). */
  async identify(token: string): Promise<JwtIdentity | null> {
    const kept = this.verified.get(token);
    if (kept !== undefined && Date.now() < kept.expiresAtMs) return kept;
    this.verified.delete(token);
    const identity = await this.verify(token);
    if (identity === null) return null;
    this.verified.set(token, identity);
    if (this.verified.size > VERIFIED_KEPT) this.verified.delete(this.verified.keys().next().value!);
    return identity;
  }

  private async verify(token: string): Promise<JwtIdentity | null> {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.keys, {
        algorithms: ALGORITHMS,
        requiredClaims: ['exp'],
        clockTolerance: CLOCK_LEEWAY_S,
        ...(this.options.issuer === undefined ? {} : { issuer: this.options.issuer }),
        ...(this.options.audience === undefined ? {} : { audience: this.options.audience }),
      }));
    } catch {
      return null;
    }
    const user = payload[this.options.userClaim ?? 'sub'];
    if (typeof user !== 'string' || !validUserName(user)) return null;
    const admin = payload[this.options.adminClaim ?? 'turnhost_admin'] === true;
    return { user, admin, via: 'jwt', expiresAtMs: (payload.exp! + CLOCK_LEEWAY_S) * 1000 };
  }
}
