// Page logins (PROTOCOL.md §5.1): single-use login codes for `web --open`, and logins that expire.
import { expect } from 'chai';
import type { IncomingMessage } from 'node:http';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { HOME_OWNER } from '../../actors/daemon/identity.js';
import { UserDirectory } from '../../actors/daemon/user-directory.js';
import { Access } from '../../edge/access.js';
import { TokenSource } from '../../edge/http-token.js';
import { LOGIN_CODE_TTL_MS, makeLoginCode, takeLoginCode } from '../../edge/login-codes.js';

describe('page logins', () => {
  let home: string;
  beforeEach(() => (home = mkdtempSync(join(tmpdir(), 'turnhost-login-'))));
  afterEach(() => rmSync(home, { recursive: true, force: true }));

  it('a login code logs in once; an old one, a made-up one or a malformed one never', () => {
    const code = makeLoginCode(home);
    expect(takeLoginCode(home, code)).to.equal(true);
    expect(takeLoginCode(home, code)).to.equal(false);
    expect(takeLoginCode(home, 'x'.repeat(32))).to.equal(false);
    expect(takeLoginCode(home, '../../http.token')).to.equal(false);
    const old = makeLoginCode(home);
    const dir = join(home, 'state', 'login-codes');
    for (const name of readdirSync(dir)) writeFileSync(join(dir, name), String(Date.now() - LOGIN_CODE_TTL_MS - 1000));
    expect(takeLoginCode(home, old)).to.equal(false);
  });

  it('a page login ends after --login-days, and its cookie says so (Max-Age)', async () => {
    const dayFraction = 0.5 / (24 * 60 * 60); // half a second, in days
    const users = new UserDirectory(async () => null, pino({ level: 'silent' }));
    after(() => users.close());
    const access = new Access({ tokens: new TokenSource(home, 'the-token-of-this-test'), loopback: true, port: () => 7433, allowHosts: [], corsOrigins: [], secureCookie: false, loginDays: dayFraction, home, users, jwt: null });
    const cookie = access.loginCookie(access.login(HOME_OWNER, 'the-token-of-this-test'));
    expect(cookie).to.match(/^turnhost_session_7433=[\w-]+; HttpOnly; SameSite=Strict; Path=\/; Max-Age=\d+$/);
    const request = { headers: { cookie: cookie.split(';')[0] } } as IncomingMessage;
    expect(await access.identify(request)).to.deep.equal(HOME_OWNER);
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(await access.identify(request)).to.equal(null);
  });
});
