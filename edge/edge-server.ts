// The HTTP edge (PROTOCOL.md §5): a second door to the daemon's gateway, for browsers, dashboards
// and gateways on other machines. Host and Origin are checked, then who is asking, once per request
// before any route; a WebSocket is a client like a socket one, an event stream a subscriber that
// cannot answer, a REST call a method of the client protocol. Nothing behind the gateway knows
// which door a client used.
import { createServer, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { acceptClient, nextClientId } from '../actors/daemon/client-connection.js';
import { authorize, callMethod } from '../actors/daemon/client-methods.js';
import { ANSWERED_ELSEWHERE } from '../actors/daemon/methods/method-table.js';
import { clientContext, type ClientContext } from '../actors/daemon/client-context.js';
import type { Cluster } from '../actors/daemon/peer-links.js';
import { tell } from '../actors/runtime.js';
import { ErrorCodes, errorLine, RpcError } from '../protocol/client-rpc.js';
import { MAX_FRAME_BYTES } from '../protocol/line-reader.js';
import { PEER_HEADER } from '../protocol/peer-handshake.js';
import { Access, DEFAULT_LOGIN_DAYS, type Admitted, type Refusal } from './access.js';
import { HOME_OWNER } from '../actors/daemon/identity.js';
import { UserDirectory } from '../actors/daemon/user-directory.js';
import { JwtVerifier } from './jwt-verifier.js';
import { EventStream } from './event-stream.js';
import { HttpFailure, notFound, readBody, sendError, sendFile, sendJson, sendLines, wrongMethod } from './http-answers.js';
import { TokenSource } from './http-token.js';
import { CredentialWatch } from './credential-watch.js';
import { agUiRun, MAX_OPEN_RUNS } from './ag-ui.js';
import { MAX_MCP_CALLS, mcpRequest } from './mcp-door.js';
import { a2aRequest, sendAgentCard } from './a2a-door.js';
import { edgeUrl, isLoopback } from './listen-address.js';
import { PageFiles } from './page-files.js';
import { admitPeer } from './peer-admission.js';
import { limitFrames, MAX_PRE_AUTH_FRAME_BYTES } from './pre-auth.js';
import { Places } from './places.js';
import { matchRoute } from './rest-routes.js';
import { websocketTransport } from './websocket-transport.js';
import type { EdgeOptions } from './edge-options.js';

/** A WebSocket that could not send a header has this long to send `{"auth": "<token>"}` first. */
const FIRST_FRAME_AUTH_MS = 5000;
const POLICY_VIOLATION = 1008;
const TRY_AGAIN_LATER = 1013;

export interface Edge {
  readonly url: string;
  close(): Promise<void>;
}

export async function startEdge(options: EdgeOptions): Promise<Edge> {
  const { listen, log } = options;
  let port = listen.port;
  const tokens = new TokenSource(options.home, options.envToken);
  const credentials = new CredentialWatch(tokens, log);
  const users = new UserDirectory(options.shared.people, log);
  await users.start();
  const agUiRuns = new Places(MAX_OPEN_RUNS);
  const mcpCalls = new Places(MAX_MCP_CALLS);
  const access = new Access({
    tokens,
    loopback: isLoopback(listen.host),
    port: () => port,
    allowHosts: options.allowHosts,
    corsOrigins: options.corsOrigins,
    secureCookie: options.publicUrl?.startsWith('https://') === true,
    loginDays: options.loginDays ?? DEFAULT_LOGIN_DAYS,
    home: options.home,
    users,
    jwt: options.jwt === undefined ? null : new JwtVerifier(options.jwt),
  });
  const ends: Ends = { credentials, users };
  const restClient = clientContext(options.shared, nextClientId());
  const page = new PageFiles();
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_FRAME_BYTES });
  const server = createServer({ keepAlive: true }, (req, res) => {
    serve(req, res, { options, access, restClient, page, ends, agUiRuns, mcpCalls }).catch((err: unknown) => {
      if (!(err instanceof HttpFailure) && !(err instanceof RpcError)) log.error({ err, path: pathOf(req) }, 'edge request failed');
      sendError(res, err);
    });
  });
  server.on('upgrade', (req, socket, head) => upgrade(req, socket, head, { options, access, wss, ends }));
  server.on('clientError', (_err, socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => resolve());
  });
  port = (server.address() as { port: number }).port;
  const url = options.publicUrl ?? edgeUrl(listen.host, port);
  if (!isLoopback(listen.host)) log.warn({ url }, 'the HTTP edge listens beyond this machine in plain HTTP: put a TLS proxy in front of it (docs/reverse-proxy.md)');
  log.info({ url }, 'HTTP edge listening');
  return {
    url,
    close: () => {
      credentials.close();
      users.close();
      return closeServer(server, wss);
    },
  };
}

/** What ends a connection when its credential ends: a rotated home token, a removed user, a JWT's expiry. */
interface Ends {
  credentials: CredentialWatch;
  users: UserDirectory;
}

/** Ends the connection when the credential that opened it ends; returns the forget, for when it closes first. */
function endWithCredential(ends: Ends, identity: Admitted, end: () => void): () => void {
  const forgets = [identity.via === 'home' ? ends.credentials.opened(end) : ends.users.opened(identity, end)];
  if (identity.expiresAtMs !== undefined) {
    const timer = setTimeout(end, Math.max(0, Math.min(identity.expiresAtMs - Date.now(), MAX_TIMER_MS)));
    timer.unref();
    forgets.push(() => clearTimeout(timer));
  }
  return () => forgets.forEach((forget) => forget());
}

/** setTimeout's longest delay; a JWT valid for longer (weeks) ends with its daemon, or at this. */
const MAX_TIMER_MS = 2 ** 31 - 1;

interface Serving {
  options: EdgeOptions;
  access: Access;
  restClient: ClientContext;
  page: PageFiles;
  ends: Ends;
  /** The AG-UI runs open now: one token, one credential, until there are people (PROTOCOL.md §5.6). */
  agUiRuns: Places;
  mcpCalls: Places;
}

async function serve(req: IncomingMessage, res: ServerResponse, serving: Serving): Promise<void> {
  const { access, options } = serving;
  const refusedHost = access.checkHost(req);
  if (refusedHost !== null) return refuse(res, refusedHost);
  const url = new URL(req.url ?? '/', 'http://edge');
  const method = req.method ?? 'GET';
  const cors = access.corsOrigin(req);
  if (cors !== null) res.setHeader('access-control-allow-origin', cors).setHeader('vary', 'Origin');
  if (method === 'OPTIONS') return preflight(res, cors);
  if (url.pathname === '/healthz') return health(res, serving.restClient);
  if (url.pathname === '/login') return login(req, res, url, serving);
  // Agent Cards are read before any login (PROTOCOL.md §7.3): they say how to log in.
  const card = /^(?:\/a2a\/([^/]+))?\/\.well-known\/agent-card\.json$/.exec(url.pathname);
  if (card !== null) {
    if (method !== 'GET' && method !== 'HEAD') throw wrongMethod(['GET']);
    return sendAgentCard(res, serving.restClient, card[1] === undefined ? null : decodeURIComponent(card[1]), edgeOrigin(req, options));
  }
  if (method === 'POST' || method === 'PATCH' || method === 'DELETE') {
    const refusedOrigin = access.checkOrigin(req);
    if (refusedOrigin !== null) return refuse(res, refusedOrigin);
  }
  if (serving.page.isPublic(url.pathname) && (method === 'GET' || method === 'HEAD')) return serving.page.send(url.pathname, res);
  const open = url.pathname === '/metrics' && options.metricsPublic;
  const identity = open ? HOME_OWNER : await access.identify(req);
  if (identity === null) {
    if (serving.page.isPagePath(url.pathname)) return serving.page.sendLogin(res, 401);
    return refuse(res, { status: 401, message: 'unauthorized' });
  }
  if (serving.page.isPagePath(url.pathname)) {
    if (method !== 'GET' && method !== 'HEAD') throw wrongMethod(['GET']);
    return serving.page.send(url.pathname, res);
  }
  if (url.pathname === '/metrics') {
    if (method !== 'GET') throw wrongMethod(['GET']);
    if (!identity.admin) return refuse(res, { status: 403, message: 'forbidden: /metrics is for admins (or --metrics-public)' });
    res.writeHead(200, { 'content-type': options.metrics.registry.contentType });
    res.end(await options.metrics.registry.metrics());
    return;
  }
  const events = /^\/v1\/sessions\/([^/]+)\/events$/.exec(url.pathname);
  if (events !== null) {
    if (method !== 'GET') throw wrongMethod(['GET']);
    return streamEvents(req, res, decodeURIComponent(events[1]!), url, serving, identity);
  }
  const a2a = /^\/a2a\/([^/]+)$/.exec(url.pathname);
  if (a2a !== null) {
    if (method !== 'POST') throw wrongMethod(['POST']);
    return a2aRequest(req, res, { ...serving.restClient, identity }, decodeURIComponent(a2a[1]!), edgeOrigin(req, options), (name) => options.metrics.doorCall('a2a', name));
  }
  if (url.pathname === '/mcp') {
    // Stateless (each request its own server): no stream of its own to GET, no session to DELETE.
    if (method !== 'POST') throw wrongMethod(['POST']);
    return mcpRequest(req, res, { ...serving.restClient, identity }, serving.mcpCalls, (name) => options.metrics.doorCall('mcp', name));
  }
  const agUi = /^\/v1\/ag-ui(?:\/([^/]+))?$/.exec(url.pathname);
  if (agUi !== null) {
    if (method !== 'POST') throw wrongMethod(['POST']);
    const agent = agUi[1] === undefined ? null : decodeURIComponent(agUi[1]);
    return agUiRun(req, res, { ...options, shared: { ...options.shared, identity } }, serving.agUiRuns, agent);
  }
  const match = matchRoute(method, url.pathname);
  if (match.kind === 'none') throw notFound(url.pathname);
  if (match.kind === 'wrong-method') throw wrongMethod(match.allowed);
  const answer = await match.handle({ req, parts: match.parts, query: url.searchParams, ctx: { ...serving.restClient, identity } });
  if (answer.file !== undefined) sendFile(res, answer.file);
  else if (answer.lines === undefined) sendJson(res, answer.status, answer.body);
  else sendLines(res, answer.lines.items, answer.lines.fileName);
}

/** Where callers reach this edge: its public URL when told one, else the address they used (its Host was checked). */
function edgeOrigin(req: IncomingMessage, options: EdgeOptions): string {
  return (options.publicUrl ?? `http://${req.headers.host ?? `${options.listen.host}:${options.listen.port}`}`).replace(/\/+$/, '');
}

function refuse(res: ServerResponse, refusal: Refusal): void {
  sendJson(res, refusal.status, { error: { code: ErrorCodes.invalidRequest, message: refusal.message } });
}

function preflight(res: ServerResponse, cors: string | null): void {
  if (cors !== null) {
    res.setHeader('access-control-allow-methods', 'GET, POST, PATCH, DELETE');
    res.setHeader('access-control-allow-headers', 'authorization, content-type, last-event-id');
    res.setHeader('access-control-max-age', '600');
  }
  res.writeHead(204).end();
}

async function health(res: ServerResponse, ctx: ClientContext): Promise<void> {
  const status = (await callMethod('host.status', {}, ctx)) as { host: { state: string } };
  const up = status.host.state === 'running';
  res.writeHead(up ? 200 : 503, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
  res.end(up ? 'ok\n' : `${status.host.state}\n`);
}

/** What the login form says when the token it was given is not one of this turnhost's. */
const WRONG_TOKEN = 'That token is not valid here. Check that it was copied whole, or ask the owner of this turnhost for one.';

/**
 * The login (PROTOCOL.md §5.1): the form's POST, `/login?token=…` (the home's token, a personal
 * token or a JWT), or `/login?once=…` with a single-use code `turnhost web --open` made (the
 * owner's). Each sets a cookie that is not the token and redirects, so no token stays in the
 * address bar; the form's never enters it, nor the browser's history (a wrong one is answered by
 * a redirect to the form again, Post/Redirect/Get, so a reload resends nothing).
 */
async function login(req: IncomingMessage, res: ServerResponse, url: URL, serving: Serving): Promise<void> {
  const { access } = serving;
  if (req.method === 'POST') return loginByForm(req, res, serving);
  if (req.method !== 'GET' && req.method !== 'HEAD') throw wrongMethod(['GET', 'POST']);
  const token = url.searchParams.get('token');
  const once = url.searchParams.get('once');
  if (token === null && once === null) return serving.page.sendLogin(res, url.searchParams.has('failed') ? 401 : 200, url.searchParams.has('failed') ? WRONG_TOKEN : null);
  const identity = token !== null ? await access.identifyToken(token) : access.takeLoginCode(once!) ? HOME_OWNER : null;
  if (identity === null) return serving.page.sendLogin(res, 401, WRONG_TOKEN);
  signIn(res, identity, token ?? access.homeToken(), serving);
}

async function loginByForm(req: IncomingMessage, res: ServerResponse, serving: Serving): Promise<void> {
  const refusedOrigin = serving.access.checkOrigin(req);
  if (refusedOrigin !== null) return refuse(res, refusedOrigin);
  const token = new URLSearchParams((await readBody(req)).toString('utf8')).get('token')?.trim() ?? '';
  const identity = token === '' ? null : await serving.access.identifyToken(token);
  if (identity === null) {
    res.writeHead(303, { location: '/login?failed', 'cache-control': 'no-store' }).end();
    return;
  }
  signIn(res, identity, token, serving);
}

function signIn(res: ServerResponse, identity: Admitted, credential: string, serving: Serving): void {
  serving.options.shared.audit({ user: identity.user, action: 'login' });
  res.writeHead(303, { location: '/', 'set-cookie': serving.access.loginCookie(serving.access.login(identity, credential)), 'cache-control': 'no-store' });
  res.end();
}

/** The session's events as SSE: `ready`, the replay after Last-Event-ID (or `after_seq`), then live ones. */
async function streamEvents(req: IncomingMessage, res: ServerResponse, sid: string, url: URL, serving: Serving, identity: Admitted): Promise<void> {
  const { options } = serving;
  const ctx = clientContext({ ...options.shared, identity }, nextClientId());
  if (!identity.admin) await authorize('session.resume', { session_id: sid }, ctx);
  if ((await (await options.shared.reader())?.session(sid)) === undefined) throw new RpcError(ErrorCodes.sessionNotFound, `session not found: ${sid}`);
  const afterText = req.headers['last-event-id'] ?? url.searchParams.get('after_seq');
  const afterSeq = afterText === null || afterText === undefined || afterText === '' ? undefined : Number(afterText);
  if (afterSeq !== undefined && !Number.isSafeInteger(afterSeq)) throw new RpcError(ErrorCodes.invalidParams, 'invalid params: Last-Event-ID and after_seq must be integers');
  if (!options.admit()) throw tooManyClients(options.maxClients);
  const id = ctx.clientId;
  const stream = new EventStream(res, options.limits, (overrun, unreadBytes) => {
    options.metrics.dropped(overrun.why);
    options.log.warn({ unreadBytes, maxUnreadBytes: overrun.maxUnreadBytes }, `event stream ${overrun.why}: disconnecting it`);
  });
  const untrack = options.track(stream);
  const forget = endWithCredential(serving.ends, identity, () => stream.end());
  options.metrics.opened('sse');
  tell(options.shared.gateway, { kind: 'client-open', sink: { id, write: (line) => stream.write(line) } });
  res.once('close', () => {
    untrack();
    forget();
    options.metrics.closed('sse');
    tell(options.shared.gateway, { kind: 'client-closed', clientId: id });
  });
  const answered = await callMethod('session.resume', { session_id: sid, ...(afterSeq === undefined ? {} : { after_seq: afterSeq }) }, ctx, 1);
  if (answered !== ANSWERED_ELSEWHERE) stream.end();
}

interface Upgrading {
  options: EdgeOptions;
  access: Access;
  wss: WebSocketServer;
  ends: Ends;
}

/** `/v1/rpc`: checked like a request (Host, Origin, who), then a client of the gateway. */
function upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, upgrading: Upgrading): void {
  const { access, options, wss } = upgrading;
  socket.on('error', () => socket.destroy());
  const refusal = access.checkHost(req) ?? access.checkOrigin(req);
  if (refusal !== null) return rejectUpgrade(socket, refusal.status, refusal.message);
  if (new URL(req.url ?? '/', 'http://edge').pathname !== '/v1/rpc') return rejectUpgrade(socket, 404, 'not found');
  access.identify(req).then(
    (identity) => {
      if (identity === null) return waitForAuth(req, socket, head, upgrading);
      wss.handleUpgrade(req, socket, head, (ws) => admitWebSocket(ws, socket, options, { ends: upgrading.ends, identity }));
    },
    (err: unknown) => {
      options.log.error({ err }, 'could not tell who an upgrade is');
      socket.destroy();
    },
  );
}

/** Not known by a header or a cookie: a node's link proves the cluster secret, anyone else sends a first frame with a token. */
function waitForAuth(req: IncomingMessage, socket: Duplex, head: Buffer, upgrading: Upgrading): void {
  const { options } = upgrading;
  const release = options.admit() ? options.preAuth.take() : null;
  if (release === null) return rejectUpgrade(socket, 503, 'too many connections are waiting to log in: try again later');
  socket.once('close', release);
  const cluster = options.shared.cluster;
  const waiting = { release };
  if (req.headers[PEER_HEADER] !== undefined && cluster !== null) return peerLink(req, socket, head, upgrading, cluster, waiting);
  firstFrameAuth(req, socket, head, upgrading, waiting);
}

/** A connection that has not authenticated yet: its place among those waiting. */
interface Waiting {
  release: () => void;
}

/**
 * Until it is authenticated, a connection's frames are small and a bad one ends it (ws closes it
 * with 1007 or 1009) with a warning, never an uncaught exception; once it is, neither holds.
 */
function untilAuthenticated(ws: WebSocket, log: Logger): () => void {
  limitFrames(ws, MAX_PRE_AUTH_FRAME_BYTES);
  const onError = (err: Error): void => log.warn({ why: err.message }, 'a connection that had not logged in sent a bad frame: it was closed');
  ws.on('error', onError);
  return () => {
    ws.off('error', onError);
    limitFrames(ws, MAX_FRAME_BYTES);
  };
}

/**
 * Another node's link: served once it proved it holds the cluster secret (edge/peer-admission.ts),
 * as a connection that may call session methods only, and ended when the secret is replaced.
 */
function peerLink(req: IncomingMessage, socket: Duplex, head: Buffer, upgrading: Upgrading, cluster: Cluster, waiting: Waiting): void {
  const { options, wss } = upgrading;
  wss.handleUpgrade(req, socket, head, (ws) => {
    const authenticated = untilAuthenticated(ws, options.log);
    void admitPeer(ws, cluster, FIRST_FRAME_AUTH_MS).then((admitted) => {
      waiting.release();
      if (!admitted) return ws.close(POLICY_VIOLATION, 'unauthorized');
      authenticated();
      const stop = cluster.onSecretRotated(() => ws.close(POLICY_VIOLATION, 'the cluster secret was replaced'));
      ws.once('close', stop);
      admitWebSocket(ws, socket, { ...options, shared: { ...options.shared, cluster: null, peer: true } }, null);
    });
  });
}

/** A browser cannot set headers on a WebSocket: its first frame may carry the token instead. */
function firstFrameAuth(req: IncomingMessage, socket: Duplex, head: Buffer, upgrading: Upgrading, waiting: Waiting): void {
  const { access, options, wss } = upgrading;
  wss.handleUpgrade(req, socket, head, (ws) => {
    const authenticated = untilAuthenticated(ws, options.log);
    const timer = setTimeout(() => ws.close(POLICY_VIOLATION, 'unauthorized'), FIRST_FRAME_AUTH_MS);
    ws.once('message', (data) => {
      clearTimeout(timer);
      const held = holdMessages(ws);
      access
        .identifyToken(firstFrameToken(data.toString()) ?? '')
        .catch(() => null)
        .then((identity) => {
          waiting.release();
          if (identity === null) return ws.close(POLICY_VIOLATION, 'unauthorized');
          authenticated();
          admitWebSocket(ws, socket, options, { ends: upgrading.ends, identity });
          held.replay();
        });
    });
    ws.once('close', () => clearTimeout(timer));
  });
}

/** Frames that may wait while a first frame's token is checked; a client that sends more is closed. */
const MAX_HELD_FRAMES = 64;

/**
 * A client may send its first request right behind `auth`, before the token is checked (a lookup
 * of the users may wait for the store): those frames are held, as small as any frame before
 * `auth`, and handed to the connection once it is admitted, in order.
 */
function holdMessages(ws: WebSocket): { replay: () => void } {
  const held: Array<[RawData, boolean]> = [];
  const hold = (data: RawData, isBinary: boolean): void => {
    if (held.length === MAX_HELD_FRAMES) return ws.close(POLICY_VIOLATION, 'too many frames before the login was checked');
    held.push([data, isBinary]);
  };
  ws.on('message', hold);
  return {
    replay: () => {
      ws.off('message', hold);
      for (const [data, isBinary] of held) ws.emit('message', data, isBinary);
    },
  };
}

/** `who`: the credential that opened it, whose end closes it (a node's link has none: its secret's rotation closes it). */
function admitWebSocket(ws: WebSocket, socket: Duplex, options: EdgeOptions, who: { ends: Ends; identity: Admitted } | null): void {
  if (!options.admit()) {
    ws.send(errorLine(null, tooManyClients(options.maxClients)).trimEnd());
    ws.close(TRY_AGAIN_LATER, 'too many clients');
    return;
  }
  if (who !== null) ws.once('close', endWithCredential(who.ends, who.identity, () => ws.close(POLICY_VIOLATION, 'the credential that opened this connection has ended')));
  const shared = who === null ? options.shared : { ...options.shared, identity: who.identity };
  const lines = acceptClient(options.clients, websocketTransport(ws, socket, options.limits), shared, options.log, options.metrics);
  const untrack = options.track(lines);
  ws.once('close', untrack);
}

function firstFrameToken(text: string): string | null {
  try {
    const value: unknown = JSON.parse(text);
    const token = (value as { auth?: unknown } | null)?.auth;
    return typeof token === 'string' ? token : null;
  } catch {
    return null;
  }
}

function rejectUpgrade(socket: Duplex, status: number, message: string): void {
  const body = JSON.stringify({ error: { code: ErrorCodes.invalidRequest, message } });
  const retry = status === 503 ? 'retry-after: 1\r\n' : '';
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\ncontent-type: application/json\r\n${retry}content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
}

function tooManyClients(maxClients: number): RpcError {
  return new RpcError(ErrorCodes.tooManyClients, `too many clients: this daemon serves at most ${maxClients} connections at once (--max-clients)`, { max_clients: maxClients });
}

function pathOf(req: IncomingMessage): string {
  return new URL(req.url ?? '/', 'http://edge').pathname;
}

async function closeServer(server: Server, wss: WebSocketServer): Promise<void> {
  for (const ws of wss.clients) ws.terminate();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}
