// The HTTP edge against the real daemon (PROTOCOL.md §5): who may come in, the REST routes and
// their errors, the event stream and its replay, the WebSocket's first-frame login, the metrics.
import { expect } from 'chai';
import { readFileSync, writeFileSync } from 'node:fs';
import { WebSocket } from 'ws';
import { readToken } from '../../edge/http-token.js';
import { startDaemon, TestClient, type Daemon } from '../helpers/daemon.js';
import { httpRequest, SseReader, streamedText, type HttpAnswer } from '../helpers/http.js';
import { fileWhere, filesUnder } from '../helpers/files.js';
import { Harness } from '../helpers/processes.js';

interface Edge {
  daemon: Daemon;
  port: number;
  token: string;
  auth: Record<string, string>;
}

async function startEdge(h: Harness, args: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<Edge> {
  const daemon = await startDaemon(h, ['--listen', '127.0.0.1:0', ...args], env);
  const client = await TestClient.connect(daemon);
  const status = await client.call<{ http: { url: string } }>('host.status');
  client.close();
  const port = Number(new URL(status.http.url).port);
  const token = env['TURNHOST_TOKEN'] ?? readToken(daemon.home);
  return { daemon, port, token, auth: { authorization: `Bearer ${token}` } };
}

const errorCode = (answer: HttpAnswer): number => (answer.json()['error'] as { code: number }).code;

describe('the HTTP edge (real daemon, real HTTP)', function () {
  this.timeout(60_000);
  const h = new Harness();
  afterEach(() => h.cleanup());

  it('who may come in: the token or a login cookie, the Host and the Origin checked; no secret in any output', async () => {
    const edge = await startEdge(h, ['--cors-origin', 'https://app.example']);
    const { port, token, auth } = edge;
    expect((await httpRequest(port, { path: '/healthz' })).text).to.equal('ok\n');
    const anonymous = await httpRequest(port, { path: '/v1/status' });
    expect(anonymous.status).to.equal(401);
    expect(anonymous.json()).to.deep.equal({ error: { code: -32600, message: 'unauthorized' } });
    expect((await httpRequest(port, { path: '/v1/status', headers: { authorization: 'Bearer wrong' } })).status).to.equal(401);
    expect((await httpRequest(port, { path: '/v1/status', headers: auth })).status).to.equal(200);

    const wrongLogin = await httpRequest(port, { path: '/login?token=wrong' });
    expect(wrongLogin.status).to.equal(401);
    expect(wrongLogin.headers['content-type']).to.include('text/html');
    const login = await httpRequest(port, { path: `/login?token=${encodeURIComponent(token)}` });
    expect(login.status).to.equal(303);
    expect(login.headers.location).to.equal('/');
    const cookie = login.headers['set-cookie']![0]!;
    expect(cookie).to.match(new RegExp(`^turnhost_session_${port}=[\\w-]+; HttpOnly; SameSite=Strict; Path=/; Max-Age=604800$`));
    expect(cookie).to.not.include(token);
    const session = cookie.split(';')[0]!;
    expect((await httpRequest(port, { path: '/v1/sessions', headers: { cookie: session } })).status).to.equal(200);
    expect((await httpRequest(port, { path: '/', headers: { cookie: session } })).text).to.include('<div id="app">');

    const rebinding = await httpRequest(port, { path: '/v1/status', headers: { ...auth, host: `evil.example:${port}` } });
    expect(rebinding.status).to.equal(403);
    const foreign = await httpRequest(port, { method: 'POST', path: '/v1/sessions', headers: { ...auth, origin: 'https://evil.example' }, body: {} });
    expect(foreign.status).to.equal(403);
    const allowed = await httpRequest(port, { method: 'POST', path: '/v1/sessions', headers: { ...auth, origin: 'https://app.example' }, body: { session_id: 'cors' } });
    expect(allowed.status).to.equal(201);
    expect(allowed.headers['access-control-allow-origin']).to.equal('https://app.example');
    const own = await httpRequest(port, { method: 'POST', path: '/v1/sessions', headers: { ...auth, origin: `http://127.0.0.1:${port}` }, body: {} });
    expect(own.status).to.equal(201);
    expect(own.headers['access-control-allow-origin']).to.equal(undefined);

    const rotated = await h.runCli(['token', '--rotate', '--home', edge.daemon.home]);
    const fresh = rotated.stdout.trim();
    expect(fresh).to.not.equal(token);
    expect((await httpRequest(port, { path: '/v1/sessions', headers: { cookie: session } })).status, 'a rotation ends old logins').to.equal(401);
    expect((await httpRequest(port, { path: '/v1/sessions', headers: auth })).status).to.equal(401);
    expect((await httpRequest(port, { path: '/v1/sessions', headers: { authorization: `Bearer ${fresh}` } })).status).to.equal(200);

    const metrics = await httpRequest(port, { path: '/metrics', headers: { authorization: `Bearer ${fresh}` } });
    expect((await h.runCli(['stop', '--home', edge.daemon.home])).code).to.equal(0);
    const secrets = [token, fresh, session.split('=')[1]!];
    const outputs = [edge.daemon.process.stderr, metrics.text, rotated.stderr];
    for (const file of filesUnder(edge.daemon.home).filter((f) => !f.endsWith('http.token'))) outputs.push(readFileSync(file, 'latin1'));
    for (const secret of secrets) for (const output of outputs) expect(output.includes(secret), 'a secret in an output').to.equal(false);
  });

  it('a token rotation closes within 2 s every WebSocket and event stream the old token opened (by header, first frame or page login); the socket clients stay', async () => {
    const edge = await startEdge(h);
    const { port, token, auth } = edge;
    const unix = await TestClient.connect(edge.daemon);
    await unix.call('session.create', { session_id: 'kept' });
    const login = await httpRequest(port, { path: `/login?token=${encodeURIComponent(token)}` });
    const cookie = login.headers['set-cookie']![0]!.split(';')[0]!;
    const byHeader = new WebSocket(`ws://127.0.0.1:${port}/v1/rpc`, { headers: auth });
    const byCookie = new WebSocket(`ws://127.0.0.1:${port}/v1/rpc`, { headers: { cookie } });
    const byFrame = new WebSocket(`ws://127.0.0.1:${port}/v1/rpc`);
    const sockets = [byHeader, byCookie, byFrame];
    const closed = sockets.map((ws) => new Promise<number>((resolve) => ws.once('close', (code) => resolve(code))));
    await Promise.all(sockets.map((ws) => new Promise((resolve) => ws.once('open', resolve))));
    byFrame.send(JSON.stringify({ auth: token }));
    for (const ws of sockets) {
      ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'session.list', params: {} }));
      await new Promise((resolve) => ws.once('message', resolve));
    }
    const streams = [new SseReader(port, '/v1/sessions/kept/events', auth), new SseReader(port, '/v1/sessions/kept/events', { cookie })];
    for (const stream of streams) await stream.until((events) => events.some((e) => e.event === 'ready'), 'ready');

    const rotated = await h.runCli(['token', '--rotate', '--home', edge.daemon.home]);
    expect(rotated.code).to.equal(0);
    const began = performance.now();
    expect(await Promise.all(closed)).to.deep.equal([1008, 1008, 1008]);
    await Promise.all(streams.map((stream) => stream.ended));
    expect(performance.now() - began, 'ms from the rotation to the last close').to.be.below(2_000);
    expect(await unix.call('session.list')).to.have.property('sessions');
    unix.close();
  });

  it('two daemons on one host keep their page logins apart (the cookie is named after the port); web --open hands its opener a single-use code, never the token; start says why its daemon exited', async () => {
    const [one, two] = [await startEdge(h), await startEdge(h)];
    const cookieOf = async (edge: Edge) => (await httpRequest(edge.port, { path: `/login?token=${encodeURIComponent(edge.token)}` })).headers['set-cookie']![0]!.split(';')[0]!;
    // A browser sends both cookies to both (cookies ignore ports): each edge reads its own.
    const both = `${await cookieOf(one!)}; ${await cookieOf(two!)}`;
    for (const edge of [one!, two!]) expect((await httpRequest(edge.port, { path: '/v1/sessions', headers: { cookie: both } })).status).to.equal(200);

    // An opener on PATH that writes down the command line it was given.
    const bin = h.tempDir();
    const argvFile = `${bin}/argv`;
    writeFileSync(`${bin}/xdg-open`, `#!/bin/sh\nprintf '%s\\n' "$@" > '${argvFile}'\n`, { mode: 0o755 });
    const web = await h.runCli(['web', '--home', one!.daemon.home, '--open'], { PATH: `${bin}:${process.env['PATH']}` });
    expect(web.code, web.stderr).to.equal(0);
    const opened = (await fileWhere(argvFile, (text) => text.trim() !== '', 'the opener to run', 5_000)).trim();
    expect(opened).to.not.include(one!.token);
    const link = new URL(opened);
    expect(link.pathname).to.equal('/login');
    expect([...link.searchParams.keys()]).to.deep.equal(['once']);
    const first = await httpRequest(one!.port, { path: `${link.pathname}${link.search}` });
    expect(first.status).to.equal(303);
    expect((await httpRequest(one!.port, { path: `${link.pathname}${link.search}` })).status, 'a code logs in once').to.equal(401);
    const login = first.headers['set-cookie']![0]!.split(';')[0]!;
    expect((await httpRequest(one!.port, { path: '/v1/sessions', headers: { cookie: login } })).status).to.equal(200);

    const unreachable = await h.runCli(['start', '--home', h.tempDir(), '--store', 'postgres://u:secret-pw@127.0.0.1:1/db']);
    expect(unreachable.code).to.equal(1);
    expect(unreachable.stderr).to.match(/cannot reach the store postgres:\/\/u:\*\*\*@127\.0\.0\.1:1\/db/);
    expect(unreachable.stderr).to.not.match(/already running/);
  });

  it('turnhost web starts a listening daemon and prints the login address; turnhost token prints the token it holds', async () => {
    const home = h.tempDir();
    const web = await h.runCli(['web', '--home', home, '--listen', '127.0.0.1:0']);
    expect(web.code, web.stderr).to.equal(0);
    const address = new URL(web.stdout.trim());
    expect(address.pathname).to.equal('/login');
    const token = (await h.runCli(['token', '--home', home])).stdout.trim();
    expect(address.searchParams.get('token')).to.equal(token);
    const login = await httpRequest(Number(address.port), { path: `${address.pathname}${address.search}` });
    expect(login.status).to.equal(303);
    const again = await h.runCli(['web', '--home', home]);
    expect(again.stdout.trim(), 'a running daemon is used as it is').to.equal(web.stdout.trim());
    expect((await h.runCli(['stop', '--home', home])).code).to.equal(0);
  });

  it('a turn by POST, read on its event stream; a stream cut mid-turn and reopened with Last-Event-ID gives the reply whole, once', async () => {
    const edge = await startEdge(h, ['--agent', 'test/fixtures/streaming-agent.mjs']);
    const { port, auth } = edge;
    expect((await httpRequest(port, { method: 'POST', path: '/v1/sessions', headers: auth, body: { session_id: 'web' } })).status).to.equal(201);
    const first = new SseReader(port, '/v1/sessions/web/events', auth);
    await first.until((events) => events.some((e) => e.event === 'ready'), 'ready');
    expect(first.headers['content-type']).to.equal('text/event-stream; charset=utf-8');
    expect(first.headers['cache-control']).to.equal('no-cache');
    expect(first.headers['x-accel-buffering']).to.equal('no');
    const submitted = await httpRequest(port, { method: 'POST', path: '/v1/sessions/web/prompts', headers: auth, body: { text: 'stream 60 5' } });
    expect(submitted.status).to.equal(202);
    expect(submitted.json()).to.include({ status: 'streaming' });
    await first.until((events) => events.filter((e) => e.event === 'message.delta').length >= 20, '20 fragments');
    first.close();
    const lastId = first.events.filter((e) => e.id !== undefined).at(-1)!.id!;
    const second = new SseReader(port, '/v1/sessions/web/events', { ...auth, 'last-event-id': lastId });
    await second.until((events) => events.some((e) => e.event === 'turn.end'), 'the turn end');
    expect(JSON.parse(second.events[0]!.data)).to.include({ replay: 'complete' });
    const fragments = [...first.events, ...second.events];
    const expected = Array.from({ length: 60 }, (_, i) => `part ${i + 1} `).join('');
    expect(streamedText(fragments)).to.equal(expected);
    const ids = fragments.filter((e) => e.id !== undefined).map((e) => Number(e.id));
    expect(ids).to.deep.equal(Array.from({ length: ids.length }, (_, i) => i + 1));
    second.close();
    const view = (await httpRequest(port, { path: '/v1/sessions/web', headers: auth })).json();
    expect(view).to.include({ session_id: 'web', running: false, turn_id: null, message_count: 62 });
  });

  it('a clarify question is an `event: request` on the stream, and a POST answer ends the turn', async () => {
    const { port, auth } = await startEdge(h);
    await httpRequest(port, { method: 'POST', path: '/v1/sessions', headers: auth, body: { session_id: 'ask' } });
    const stream = new SseReader(port, '/v1/sessions/ask/events', auth);
    await stream.until((events) => events.some((e) => e.event === 'ready'), 'ready');
    await httpRequest(port, { method: 'POST', path: '/v1/sessions/ask/prompts', headers: auth, body: { text: '/ask which colour?' } });
    await stream.until((events) => events.some((e) => e.event === 'request'), 'the question');
    const asked = JSON.parse(stream.events.find((e) => e.event === 'request')!.data) as { request_id: string; method: string; params: Record<string, unknown> };
    expect(asked).to.deep.include({ method: 'clarify.request' });
    expect(asked.params).to.include({ question: 'which colour?' });
    const view = (await httpRequest(port, { path: '/v1/sessions/ask', headers: auth })).json();
    expect(view['open_requests']).to.deep.equal([asked]);
    const answered = await httpRequest(port, { method: 'POST', path: `/v1/requests/${asked.request_id}/answer`, headers: auth, body: { result: { answer: 'teal' } } });
    expect(answered.json()).to.deep.equal({ status: 'ok' });
    await stream.until((events) => events.some((e) => e.event === 'turn.end'), 'the turn end');
    expect(streamedText(stream.events)).to.equal('answer: teal');
    stream.close();
  });

  it('errors: 400 not JSON, 413 over 1 MiB, 404 unknown path, session or queue item, 405 wrong method, 409 busy, all as {error: {code, message}}; the queue by GET and PATCH', async () => {
    const { port, auth } = await startEdge(h);
    const notJson = await httpRequest(port, { method: 'POST', path: '/v1/sessions', headers: auth, body: '{nope' });
    expect([notJson.status, errorCode(notJson)]).to.deep.equal([400, -32700]);
    const huge = await httpRequest(port, { method: 'POST', path: '/v1/sessions', headers: auth, body: Buffer.alloc(1024 * 1024 + 1, 0x20) });
    expect(huge.status).to.equal(413);
    const unknownPath = await httpRequest(port, { path: '/v1/nothing', headers: auth });
    expect(unknownPath.status).to.equal(404);
    const unknownSession = await httpRequest(port, { path: '/v1/sessions/ghost/history', headers: auth });
    expect([unknownSession.status, errorCode(unknownSession)]).to.deep.equal([404, 4004]);
    const wrongMethod = await httpRequest(port, { method: 'DELETE', path: '/v1/sessions', headers: auth });
    expect(wrongMethod.status).to.equal(405);
    const badParams = await httpRequest(port, { method: 'POST', path: '/v1/sessions/x/prompts', headers: auth, body: { text: 42 } });
    expect([badParams.status, errorCode(badParams)]).to.deep.equal([400, -32602]);
    await httpRequest(port, { method: 'POST', path: '/v1/sessions', headers: auth, body: { session_id: 'busy' } });
    await httpRequest(port, { method: 'POST', path: '/v1/sessions/busy/prompts', headers: auth, body: { text: '/sleep 5' } });
    const busy = await httpRequest(port, { method: 'POST', path: '/v1/sessions/busy/prompts', headers: auth, body: { text: 'more', on_busy: 'reject' } });
    expect([busy.status, errorCode(busy)]).to.deep.equal([409, 4009]);
    await httpRequest(port, { method: 'POST', path: '/v1/sessions/busy/prompts', headers: auth, body: { text: 'queued one' } });
    await httpRequest(port, { method: 'POST', path: '/v1/sessions/busy/prompts', headers: auth, body: { text: 'queued two' } });
    const queue = (await httpRequest(port, { path: '/v1/sessions/busy/queue', headers: auth })).json() as { items: { queue_id: string; text: string }[] };
    expect(queue.items.map((item) => item.text)).to.deep.equal(['queued one', 'queued two']);
    const [one, two] = queue.items;
    expect((await httpRequest(port, { method: 'PATCH', path: `/v1/sessions/busy/queue/${one!.queue_id}`, headers: auth, body: { action: 'edit', text: 'edited' } })).status).to.equal(200);
    expect((await httpRequest(port, { method: 'PATCH', path: `/v1/sessions/busy/queue/${two!.queue_id}`, headers: auth, body: { action: 'delete' } })).status).to.equal(200);
    const unknownItem = await httpRequest(port, { method: 'PATCH', path: '/v1/sessions/busy/queue/q-none', headers: auth, body: { action: 'delete' } });
    expect([unknownItem.status, errorCode(unknownItem)]).to.deep.equal([404, 4041]);
    const after = (await httpRequest(port, { path: '/v1/sessions/busy/queue', headers: auth })).json() as { items: { text: string }[] };
    expect(after.items.map((item) => item.text)).to.deep.equal(['edited']);
    const stop = await httpRequest(port, { method: 'POST', path: '/v1/sessions/busy/interrupt', headers: auth, body: {} });
    expect(stop.json()).to.deep.equal({ applied: true });
  });

  it('WebSocket /v1/rpc: the token as a first frame within 5 s, requests right behind it answered in order; without it the socket is closed', async () => {
    const { port, token } = await startEdge(h);
    const refused = new WebSocket(`ws://127.0.0.1:${port}/v1/rpc`);
    await new Promise((resolve) => refused.once('open', resolve));
    refused.send(JSON.stringify({ auth: 'wrong' }));
    const code = await new Promise<number>((resolve) => refused.once('close', (c) => resolve(c)));
    expect(code).to.equal(1008);
    const ws = new WebSocket(`ws://127.0.0.1:${port}/v1/rpc`);
    await new Promise((resolve) => ws.once('open', resolve));
    const answers: unknown[] = [];
    const three = new Promise<void>((resolve) => ws.on('message', (data) => answers.push(JSON.parse(data.toString())) === 3 && resolve()));
    // Requests right behind `auth`, in the same write, are held while the token is checked, not lost.
    ws.send(JSON.stringify({ auth: token }));
    for (const id of [1, 2, 3]) ws.send(JSON.stringify({ jsonrpc: '2.0', id, method: 'session.list', params: {} }));
    await three;
    expect(answers).to.deep.equal([1, 2, 3].map((id) => ({ jsonrpc: '2.0', id, result: { sessions: [] } })));
    ws.close();
  });

  it('metrics: a completed, an interrupted and a failed turn move their counters; active_turns counts turns running now', async () => {
    const { port, auth, daemon } = await startEdge(h);
    const client = await TestClient.connect(daemon);
    await client.call('session.create', { session_id: 'm' });
    const count = async (outcome: string) => {
      const text = (await httpRequest(port, { path: '/metrics', headers: auth })).text;
      return Number(new RegExp(`^turnhost_turns_total\\{outcome="${outcome}"\\} (\\d+)$`, 'm').exec(text)?.[1]);
    };
    await client.call('prompt.submit', { session_id: 'm', text: 'fine' });
    await client.nextEvent('turn.end', 'm');
    await client.call('prompt.submit', { session_id: 'm', text: '/fail on purpose' });
    await client.nextEvent('turn.error', 'm');
    await client.call('prompt.submit', { session_id: 'm', text: '/sleep 30' });
    await client.nextEvent('turn.started', 'm', (e) => client.events.filter((x) => x.type === 'turn.started').indexOf(e) === 2);
    expect((await client.call<{ host: { active_turns: number } }>('host.status')).host.active_turns).to.equal(1);
    await client.call('session.interrupt', { session_id: 'm' });
    await client.until(() => client.events.filter((e) => e.type === 'turn.end').length === 2, 'the interrupted end');
    expect((await client.call<{ host: { active_turns: number } }>('host.status')).host.active_turns, 'the moment it ended').to.equal(0);
    expect([await count('completed'), await count('failed'), await count('interrupted'), await count('lost')]).to.deep.equal([1, 1, 1, 0]);
    const text = (await httpRequest(port, { path: '/metrics', headers: auth })).text;
    expect(text).to.match(/^turnhost_host_up 1$/m);
    expect(text).to.match(/^turnhost_clients\{transport="unix"\} 1$/m);
    expect(text).to.match(/^turnhost_sessions\{status="active"\} 1$/m);
    expect(text).to.match(/^turnhost_turn_duration_seconds_count 3$/m);
    expect(text).to.match(/^process_resident_memory_bytes \d+/m);
    client.close();
  });
});
