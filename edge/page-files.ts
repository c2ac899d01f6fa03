// The page's files (PROTOCOL.md §5.5), bundled at build time into dist/web/ and served from the
// package itself: nothing is fetched from another host. A request without a login gets a page
// that says how to get one.
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

export class PageFiles {
  static readonly loginNeededHtml =
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>turnhost: log in</title></head>' +
    '<body><main><h1>Not logged in</h1><p>This page needs a login. Open the address <code>turnhost web</code> prints (it ends in <code>/login?token=…</code>), or ask the owner of this turnhost for it.</p></main></body></html>';

  private readonly cache = new Map<string, Buffer>();

  isPagePath(pathname: string): boolean {
    return Object.hasOwn(FILES, pathname);
  }

  send(pathname: string, res: ServerResponse): void {
    const entry = FILES[pathname]!;
    let body = this.cache.get(entry.file);
    if (body === undefined) {
      body = readFileSync(`${WEB_ROOT}${entry.file}`);
      this.cache.set(entry.file, body);
    }
    res.writeHead(200, { 'content-type': entry.type, 'content-length': body.length, ...PAGE_HEADERS });
    res.end(body);
  }

  sendLoginNeeded(res: ServerResponse): void {
    res.writeHead(401, { 'content-type': 'text/html; charset=utf-8', ...PAGE_HEADERS });
    res.end(PageFiles.loginNeededHtml);
  }
}
