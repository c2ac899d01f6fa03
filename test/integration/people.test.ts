// People (PROTOCOL.md §5.6) against the real daemon: personal tokens made by `turnhost user`, JWTs
// signed by an identity provider this test runs on 127.0.0.1 (its JWKS served over HTTP), members
// who cannot see each other through any door, sharing both ways, attribution, the audit log, and
// a removed user's live connections closed.
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT, type JWK, type CryptoKey } from 'jose';
import { WebSocket } from 'ws';
import { connect, TurnhostError, type TurnhostClient } from '../../client/index.js';
import { readToken } from '../../edge/http-token.js';
import { startDaemon, TestClient, type Daemon } from '../helpers/daemon.js';
import { httpRequest, SseReader } from '../helpers/http.js';
import { LoopbackServer } from '../helpers/loopback-server.js';
import { CLI, Harness } from '../helpers/processes.js';

const ISSUER = 'https://idp.test';
const AUDIENCE = 'turnhost';

/** An identity provider: a key pair, its public key served as a JWKS, and tokens it signs. */
class IdentityProvider {
  private constructor(
    readonly server: LoopbackServer,
    readonly privateKey: CryptoKey,
    readonly publicJwk: JWK,
  ) {}

  static async start(): Promise<IdentityProvider> {
    const { publicKey, privateKey } = await generateKeyPair('RS256');
    const publicJwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
    const server = await LoopbackServer.start((_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys: [publicJwk] }));
    });
    return new IdentityProvider(server, privateKey, publicJwk);
  }

  get jwksUrl(): string {
    return `${this.server.origin}/jwks`;
  }

  sign(subject: string, change: (jwt: SignJWT) => SignJWT = (jwt) => jwt, key: CryptoKey | Uint8Array = this.privateKey, alg = 'RS256'): Promise<string> {
    const jwt = new SignJWT({}).setProtectedHeader({ alg, kid: 'k1' }).setSubject(subject).setIssuer(ISSUER).setAudience(AUDIENCE).setIssuedAt().setExpirationTime('5m');
    return change(jwt).sign(key);
  }
}

interface Team {
  daemon: Daemon;
  port: number;
  url: string;
  owner: string;
  alice: string;
  bob: string;
}

async function startTeam(h: Harness, idp: IdentityProvider | null): Promise<Team> {
  const jwt = idp === null ? [] : ['--jwt-jwks', idp.jwksUrl, '--jwt-issuer', ISSUER, '--jwt-audience', AUDIENCE];
  const daemon = await startDaemon(h, ['--listen', '127.0.0.1:0', ...jwt]);
  const add = async (name: string) => {
    const made = await h.runCli(['user', 'add', name, '--home', daemon.home]);
    expect(made.code, made.stderr).to.equal(0);
    return made.stdout.trim();
  };
  const client = await TestClient.connect(daemon);
  const url = (await client.call<{ http: { url: string } }>('host.status')).http.url;
  client.close();
  return { daemon, port: Number(new URL(url).port), url, owner: readToken(daemon.home), alice: await add('alice'), bob: await add('bob') };
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

async function rpcCode(call: Promise<unknown>): Promise<number> {
  try {
    await call;
  } catch (err) {
    if (err instanceof TurnhostError) return err.code;
    throw err;
  }
  return 0;
}

describe('people: identities, ownership, sharing, attribution (real daemon)', function () {
  this.timeout(60_000);
  const h = new Harness();
  const clients: TurnhostClient[] = [];
  const providers: IdentityProvider[] = [];
  afterEach(async () => {
    for (const client of clients.splice(0)) client.close();
    for (const idp of providers.splice(0)) await idp.server.close();
    await h.cleanup();
  });

  async function wsClient(team: Team, token: string): Promise<TurnhostClient> {
    const client = await connect({ url: team.url, token });
    clients.push(client);
    return client;
  }

  it("JWTs: a good one is its subject; a wrong audience, an expired one, alg none, HS256 keyed with the public JWK, another signer's, one without exp are 401", async () => {
    const idp = await IdentityProvider.start();
    providers.push(idp);
    const team = await startTeam(h, idp);
    const status = async (token: string) => (await httpRequest(team.port, { path: '/v1/sessions', headers: bearer(token) })).status;

    const carol = await idp.sign('carol');
    expect(await status(carol)).to.equal(200);
    const created = await httpRequest(team.port, { method: 'POST', path: '/v1/sessions', headers: { ...bearer(carol), 'content-type': 'application/json' }, body: { session_id: 'carols' } });
    expect(created.status).to.equal(201);
    const ws = await wsClient(team, carol);
    expect((await ws.hostStatus()).you).to.deep.equal({ user: 'carol', admin: false });
    expect((await ws.listSessions()).sessions.map((s) => s.session_id)).to.deep.equal(['carols']);

    const other = await generateKeyPair('RS256');
    const unsigned = (claims: object) => `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.`;
    const now = Math.floor(Date.now() / 1000);
    const refused = {
      'wrong audience': await idp.sign('carol', (jwt) => jwt.setAudience('another-app')),
      expired: await idp.sign('carol', (jwt) => jwt.setIssuedAt(now - 3600).setExpirationTime(now - 600)),
      'alg none': unsigned({ sub: 'carol', iss: ISSUER, aud: AUDIENCE, exp: now + 300 }),
      'HS256 keyed with the public JWK': await idp.sign('carol', (jwt) => jwt, new TextEncoder().encode(JSON.stringify(idp.publicJwk)), 'HS256'),
      "another signer's key": await idp.sign('carol', (jwt) => jwt, other.privateKey),
      'no exp': await new SignJWT({}).setProtectedHeader({ alg: 'RS256', kid: 'k1' }).setSubject('carol').setIssuer(ISSUER).setAudience(AUDIENCE).sign(idp.privateKey),
    };
    for (const [what, token] of Object.entries(refused)) expect(await status(token), what).to.equal(401);
  });

  it('members see only their own sessions, through REST, event streams, the WebSocket, AG-UI and a page login; admins and the owner see all', async () => {
    const team = await startTeam(h, null);
    const alice = await wsClient(team, team.alice);
    await alice.createSession({ session_id: 'alices' });
    const bob = await wsClient(team, team.bob);

    expect((await httpRequest(team.port, { path: '/v1/sessions/alices/history', headers: bearer(team.bob) })).status, 'REST').to.equal(404);
    expect((await httpRequest(team.port, { path: '/v1/sessions/alices', headers: bearer(team.bob) })).status, 'REST session').to.equal(404);
    const sse = new SseReader(team.port, '/v1/sessions/alices/events', bearer(team.bob));
    await sse.ended;
    expect(sse.status, 'SSE').to.equal(404);
    expect(await rpcCode(bob.history('alices')), 'WebSocket history').to.equal(4004);
    expect(await rpcCode(bob.resumeSession('alices')), 'WebSocket resume').to.equal(4004);
    expect(await rpcCode(bob.submit('alices', 'hello')), 'WebSocket submit').to.equal(4004);
    expect(await rpcCode(bob.createSession({ session_id: 'alices' })), 'taking its id').to.equal(4003);
    expect((await bob.listSessions()).sessions, 'list').to.deep.equal([]);
    const agUi = await httpRequest(team.port, {
      method: 'POST',
      path: '/v1/ag-ui',
      headers: { ...bearer(team.bob), 'content-type': 'application/json' },
      body: { threadId: 'alices', runId: 'r1', state: {}, messages: [{ id: 'm1', role: 'user', content: 'hi' }], tools: [], context: [], forwardedProps: {} },
    });
    expect(agUi.text, 'AG-UI').to.match(/"type":"RUN_ERROR"[^\n]*"code":"not_found"/);
    const login = await httpRequest(team.port, { path: `/login?token=${encodeURIComponent(team.bob)}` });
    const cookie = login.headers['set-cookie']![0]!.split(';')[0]!;
    expect((await httpRequest(team.port, { path: '/v1/sessions', headers: { cookie } })).json(), 'page login').to.deep.equal({ sessions: [] });
    expect((await httpRequest(team.port, { path: '/v1/status', headers: bearer(team.bob) })).status, 'status is for admins').to.equal(403);
    expect((await httpRequest(team.port, { path: '/metrics', headers: bearer(team.bob) })).status, 'metrics are for admins').to.equal(403);

    const admin = (await h.runCli(['user', 'add', 'root', '--admin', '--home', team.daemon.home])).stdout.trim();
    for (const token of [admin, team.owner]) {
      const listed = (await httpRequest(team.port, { path: '/v1/sessions', headers: bearer(token) })).json() as { sessions: { session_id: string }[] };
      expect(listed.sessions.map((s) => s.session_id)).to.deep.equal(['alices']);
    }
  });

  it('sharing: a viewer reads and is told of questions without the means to answer; an editor drives; unshared, it is gone again; each prompt says who sent it; the audit log has every action', async () => {
    const team = await startTeam(h, null);
    const alice = await wsClient(team, team.alice);
    alice.onApproval(() => true);
    await alice.createSession({ session_id: 'shared' });
    for await (const _ of alice.turn('shared', 'from alice')) void _;
    const share = (role: string) => httpRequest(team.port, { method: 'PUT', path: '/v1/sessions/shared/shares/bob', headers: { ...bearer(team.alice), 'content-type': 'application/json' }, body: { role } });
    expect((await share('viewer')).status).to.equal(200);

    const bob = await wsClient(team, team.bob);
    let bobAsked = 0;
    bob.onApproval(() => {
      bobAsked++;
      return false;
    });
    expect((await bob.history('shared')).messages.map((m) => m.content)).to.deep.equal(['from alice', 'from alice']);
    expect(await rpcCode(bob.submit('shared', 'from bob')), 'a viewer submits').to.equal(4003);
    expect((await httpRequest(team.port, { method: 'PUT', path: '/v1/sessions/shared/shares/carol', headers: { ...bearer(team.bob), 'content-type': 'application/json' }, body: { role: 'viewer' } })).status, 'a viewer shares').to.equal(403);
    await bob.resumeSession('shared');
    const told = new Promise<Record<string, unknown>>((resolve) => {
      void (async () => {
        for await (const event of bob.events('shared')) if (event.type === 'request.open') return resolve(event.payload);
      })();
    });
    for await (const _ of alice.turn('shared', '/approve deploy')) void _;
    expect((await told)['method']).to.equal('approval.request');
    expect(bobAsked, 'the viewer was never asked').to.equal(0);
    const answered = await h.runScript(CLI, ['repl', '--home', team.daemon.home], {}, ".sql SELECT method, status, answered_by FROM server_requests\n");
    expect(answered.stdout, 'the approval is stored with who gave it').to.match(/approval\.request\s+answered\s+alice/);

    expect((await share('editor')).status).to.equal(200);
    for await (const _ of bob.turn('shared', 'from bob')) void _;
    const prompts = (await alice.history('shared')).messages.filter((m) => m.role === 'user');
    expect(prompts.map((m) => [m.content, m.by])).to.deep.equal([
      ['from alice', 'alice'],
      ['/approve deploy', 'alice'],
      ['from bob', 'bob'],
    ]);
    const cli = JSON.parse((await h.runCli(['history', 'shared', '--json', '--home', team.daemon.home])).stdout) as { role: string; by?: string }[];
    expect(cli.filter((m) => m.role === 'user').map((m) => m.by)).to.deep.equal(['alice', 'alice', 'bob']);

    expect((await httpRequest(team.port, { method: 'DELETE', path: '/v1/sessions/shared/shares/bob', headers: bearer(team.alice) })).status).to.equal(200);
    expect(await rpcCode(bob.history('shared')), 'unshared').to.equal(4004);

    const audit = readFileSync(join(team.daemon.home, 'logs', 'audit.log'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    const actions = audit.map((r) => `${String(r['user'])} ${String(r['action'])}`);
    expect(actions).to.include.members(['owner user add', 'alice create', 'alice submit', 'alice share', 'alice approve', 'bob submit', 'alice unshare']);
    const raw = readFileSync(join(team.daemon.home, 'logs', 'audit.log'), 'utf8');
    for (const token of [team.alice, team.bob, team.owner]) expect(raw).to.not.include(token);
  });

  it('user remove: the token fails at once and its live WebSocket, event stream and page login end within 2 s', async () => {
    const team = await startTeam(h, null);
    const alice = await wsClient(team, team.alice);
    await alice.createSession({ session_id: 'bobs-view' });
    await alice.shareSession('bobs-view', 'bob', 'viewer');
    const ws = new WebSocket(`ws://127.0.0.1:${team.port}/v1/rpc`, { headers: bearer(team.bob) });
    const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
    await new Promise((resolve) => ws.once('open', resolve));
    ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'session.list', params: {} }));
    await new Promise((resolve) => ws.once('message', resolve));
    const stream = new SseReader(team.port, '/v1/sessions/bobs-view/events', bearer(team.bob));
    await stream.until((events) => events.some((e) => e.event === 'ready'), 'ready');
    const login = await httpRequest(team.port, { path: `/login?token=${encodeURIComponent(team.bob)}` });
    const cookie = login.headers['set-cookie']![0]!.split(';')[0]!;

    const removed = await h.runCli(['user', 'remove', 'bob', '--home', team.daemon.home]);
    expect(removed.code, removed.stderr).to.equal(0);
    const began = performance.now();
    expect(await closed).to.equal(1008);
    await stream.ended;
    expect(performance.now() - began, 'ms from the removal to the last close').to.be.below(2_000);
    expect((await httpRequest(team.port, { path: '/v1/sessions', headers: bearer(team.bob) })).status, 'the token').to.equal(401);
    expect((await httpRequest(team.port, { path: '/v1/sessions', headers: { cookie } })).status, 'the page login').to.equal(401);
    expect(JSON.parse((await h.runCli(['user', 'list', '--json', '--home', team.daemon.home])).stdout).map((u: { name: string }) => u.name)).to.deep.equal(['alice']);
  });
});
