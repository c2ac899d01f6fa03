// The page's files (PROTOCOL.md §5.5), bundled at build time into dist/web/ and served from the
// package itself: nothing is fetched from another host. A request without a login gets the login
// form (a textbox "Token", a button "Log in"), in the page's own style: its stylesheet is the one
// file served to anyone.
import { readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';

const WEB_ROOT = fileURLToPath(new URL('../web/', import.meta.url));

const FILES: Record<string, { file: string; type: string }> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/app.css': { file: 'app.css', type: 'text/css; charset=utf-8' },
};

/** Only the page's own code runs in it, and it talks only to this edge. */
const PAGE_HEADERS = {
  'content-security-policy': "default-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

/** Served without a login: the stylesheet holds nothing of anyone's, and the login form wears it. */
const PUBLIC_PATHS = new Set(['/app.css']);
/** Where the login form says what went wrong. */
const MESSAGE_MARK = '<!--message-->';

export class PageFiles {
  private readonly cache = new Map<string, Buffer>();

  isPagePath(pathname: string): boolean {
    return Object.hasOwn(FILES, pathname);
  }

  isPublic(pathname: string): boolean {
    return PUBLIC_PATHS.has(pathname);
  }

  send(pathname: string, res: ServerResponse): void {
    const entry = FILES[pathname]!;
    const body = this.file(entry.file);
    res.writeHead(200, { 'content-type': entry.type, 'content-length': body.length, ...PAGE_HEADERS });
    res.end(body);
  }

  /** The login form; `problem` is said above it (a wrong token), as an alert. */
  sendLogin(res: ServerResponse, status: 200 | 401, problem: string | null = null): void {
    const form = this.file('login.html').toString('utf8');
    const body = problem === null ? form : form.replace(MESSAGE_MARK, `<p role="alert">${problem}</p>`);
    // A form's POST carries `Origin: null` under no-referrer, and the edge refuses a POST from an
    // origin not its own: same-origin sends this edge's origin, and nothing to any other.
    res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', ...PAGE_HEADERS, 'referrer-policy': 'same-origin' });
    res.end(body);
  }

  private file(name: string): Buffer {
    let body = this.cache.get(name);
    if (body === undefined) {
      body = readFileSync(`${WEB_ROOT}${name}`);
      this.cache.set(name, body);
    }
    return body;
  }
}
