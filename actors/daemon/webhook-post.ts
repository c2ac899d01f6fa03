// One POST of a webhook, with node:http on kept-alive connections: `fetch` cost the daemon most of
// a core at a thousand deliveries a second (its streams, signals and garbage), node:http a fraction.
// Redirects are not followed (a 3xx is an answer that is not 2xx), and an answer's body is read
// only as far as an error needs.
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

/** Connections kept open to the receivers, each: as many as sessions delivered at once. */
const SOCKETS = 64;
/** What of a receiver's error answer is kept as the event's last error. */
const ERROR_BODY_CHARS = 200;

export class WebhookPoster {
  private readonly http = new HttpAgent({ keepAlive: true, maxSockets: SOCKETS });
  private readonly https = new HttpsAgent({ keepAlive: true, maxSockets: SOCKETS });
  private readonly open = new Set<() => void>();

  constructor(private readonly timeoutMs: number) {}

  /** null when the receiver answered 2xx; else what went wrong (never a header we sent). */
  post(url: string, headers: Record<string, string>, body: string): Promise<string | null> {
    const secure = url.startsWith('https:');
    return new Promise((resolve) => {
      let settled = false;
      const settle = (error: string | null): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.open.delete(abort);
        resolve(error);
      };
      const send = secure ? httpsRequest : httpRequest;
      const req = send(url, { method: 'POST', agent: secure ? this.https : this.http, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } }, (res) =>
        answered(res).then(settle),
      );
      const abort = (): void => {
        req.destroy();
        settle('stopped');
      };
      const timer = setTimeout(() => {
        req.destroy();
        settle(`no answer in ${this.timeoutMs / 1000} s`);
      }, this.timeoutMs);
      this.open.add(abort);
      req.on('error', (err: NodeJS.ErrnoException) => settle(err.code ?? err.message));
      req.end(body);
    });
  }

  /** Ends the attempts under way (they stay pending) and the kept connections. */
  close(): void {
    for (const abort of [...this.open]) abort();
    this.http.destroy();
    this.https.destroy();
  }
}

/** A 2xx is read to its end (its connection is kept); another answer's first characters are its error. */
function answered(res: IncomingMessage): Promise<string | null> {
  const status = res.statusCode ?? 0;
  if (status >= 200 && status < 300) {
    res.resume();
    return Promise.resolve(null);
  }
  return new Promise((resolve) => {
    let text = '';
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      text += chunk;
      if (text.length >= ERROR_BODY_CHARS) res.destroy();
    });
    const done = (): void => {
      const shown = text.slice(0, ERROR_BODY_CHARS);
      resolve(`HTTP ${status}${shown === '' ? '' : ` ${JSON.stringify(shown)}`}`);
    };
    res.once('end', done);
    res.once('close', done);
    res.once('error', done);
  });
}
