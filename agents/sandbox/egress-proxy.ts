// A sandbox's one way out (AGENT.md §7): an HTTP proxy on a unix socket that only its sandbox sees
// (bound in; a bridge inside makes it 127.0.0.1:<port>). CONNECT for https, absolute-URL requests
// for plain http; a host in `allow_hosts` passes, any other gets 403 and a `sandbox-deny` record.
// It lives in the host and ends with its sandbox.
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { allowed, type HostRule } from './sandbox-config.js';

/** Connections one sandbox may hold open through its proxy: a runaway agent must not take the host's descriptors. */
const MAX_CONNECTIONS = 256;
/** A tunnel or request silent this long is closed. */
const IDLE_MS = 10 * 60_000;
/** Request headers that were the proxy's, not the server's. */
const HOP_HEADERS = new Set(['proxy-connection', 'proxy-authorization', 'connection', 'keep-alive', 'te', 'trailer', 'upgrade']);

export interface ProxyLog {
  warn(fields: object, message: string): void;
}

export class EgressProxy {
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly path: string,
  ) {}

  /** Listens on `path`; `name` is the sandbox's (a session id) in its records. */
  static async listen(path: string, rules: readonly HostRule[], name: string, log: ProxyLog): Promise<EgressProxy> {
    const server = createServer();
    const proxy = new EgressProxy(server, path);
    const deny = (host: string): void => log.warn({ name: 'sandbox-deny', sid: name, host }, 'the sandbox asked for a host it may not reach');
    server.maxConnections = MAX_CONNECTIONS;
    server.on('connection', (socket: Socket) => proxy.track(socket));
    server.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => tunnel(req, client, head, rules, deny));
    server.on('request', (req: IncomingMessage, res: ServerResponse) => forward(req, res, rules, deny));
    server.on('clientError', (_err, socket: Socket) => socket.destroy());
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(path, () => {
        server.off('error', reject);
        resolve();
      });
    });
    return proxy;
  }

  /** Stops listening and ends every tunnel. */
  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private track(socket: Socket): void {
    this.sockets.add(socket);
    socket.setTimeout(IDLE_MS, () => socket.destroy());
    socket.once('close', () => this.sockets.delete(socket));
  }
}

/** `host:port` of a CONNECT, or null when it is not one. */
function target(authority: string | undefined, defaultPort: number): { host: string; port: number } | null {
  if (authority === undefined) return null;
  try {
    const url = new URL(`http://${authority}`);
    const port = url.port === '' ? defaultPort : Number(url.port);
    return url.hostname === '' ? null : { host: url.hostname.replace(/^\[|\]$/g, ''), port };
  } catch {
    return null;
  }
}

function tunnel(req: IncomingMessage, client: Socket, head: Buffer, rules: readonly HostRule[], deny: (host: string) => void): void {
  const to = target(req.url, 443);
  if (to === null) return refuse(client, 400, 'Bad Request');
  if (!allowed(rules, to.host, to.port)) {
    deny(`${to.host}:${to.port}`);
    return refuse(client, 403, 'Forbidden');
  }
  const upstream = connect(to.port, to.host);
  upstream.once('connect', () => {
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length > 0) upstream.write(head);
    upstream.pipe(client);
    client.pipe(upstream);
  });
  upstream.setTimeout(IDLE_MS, () => upstream.destroy());
  upstream.once('error', () => (upstream.readyState === 'opening' ? refuse(client, 502, 'Bad Gateway') : client.destroy()));
  client.once('error', () => upstream.destroy());
  client.once('close', () => upstream.destroy());
  upstream.once('close', () => client.destroy());
}

function forward(req: IncomingMessage, res: ServerResponse, rules: readonly HostRule[], deny: (host: string) => void): void {
  let url: URL;
  try {
    url = new URL(req.url ?? '');
  } catch {
    return answer(res, 400, 'a proxy request names an absolute http:// URL (https goes by CONNECT)');
  }
  if (url.protocol !== 'http:') return answer(res, 400, 'https goes by CONNECT');
  const port = url.port === '' ? 80 : Number(url.port);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!allowed(rules, host, port)) {
    deny(`${host}:${port}`);
    return answer(res, 403, `the sandbox may not reach ${host}:${port}`);
  }
  const headers = Object.fromEntries(Object.entries(req.headers).filter(([name]) => !HOP_HEADERS.has(name)));
  const upstream = httpRequest({ host, port, method: req.method, path: `${url.pathname}${url.search}`, headers, timeout: IDLE_MS }, (answer_) => {
    res.writeHead(answer_.statusCode ?? 502, answer_.headers);
    answer_.pipe(res);
  });
  upstream.on('timeout', () => upstream.destroy(new Error('timeout')));
  upstream.on('error', () => (res.headersSent ? res.destroy() : answer(res, 502, `${host}:${port} could not be reached`)));
  req.pipe(upstream);
}

function refuse(client: Socket, status: number, reason: string): void {
  client.end(`HTTP/1.1 ${status} ${reason}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
}

function answer(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'content-type': 'text/plain', connection: 'close' }).end(`${text}\n`);
}
