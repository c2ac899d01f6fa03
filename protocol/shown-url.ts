// A URL as logs, `.webhooks`, the metrics and status show it: without a user, password or query,
// where a receiver's or a collector's credentials usually sit (a query is marked `?…`).

/** The URL without its credentials; `(not a URL)` for text that is not one. */
export function shownUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname}${parsed.search === '' ? '' : '?…'}`;
  } catch {
    return '(not a URL)';
  }
}
