// `--listen HOST:PORT` (PROTOCOL.md §5): where the HTTP edge listens. Port 0 picks a free port.
import { isIP } from 'node:net';

export interface ListenAddress {
  host: string;
  port: number;
}

/** `127.0.0.1:7433`, `[::1]:0`, `localhost:8080`; throws with the reason otherwise. */
export function parseListenAddress(text: string): ListenAddress {
  const match = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(text.trim());
  if (match === null) throw new Error(`expected HOST:PORT (e.g. 127.0.0.1:7433), got "${text}"`);
  const host = match[1] ?? match[2]!;
  const port = Number(match[3]);
  if (port > 65535) throw new Error(`the port must be 0 to 65535, got ${port}`);
  if (match[1] !== undefined && isIP(host) !== 6) throw new Error(`"[${host}]" is not an IPv6 address`);
  return { host, port };
}

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** The URL of the edge as a browser on this machine writes it. */
export function edgeUrl(host: string, port: number): string {
  return `http://${isIP(host) === 6 ? `[${host}]` : host}:${port}`;
}
