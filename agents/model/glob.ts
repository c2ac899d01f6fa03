// Tool-name globs (AGENT.md §1): `*` matches any run of characters, everything else itself.

export type GlobList = (name: string) => boolean;

/** True when the name matches any of the globs. */
export function globList(globs: readonly string[]): GlobList {
  const patterns = globs.map((glob) => new RegExp(`^${glob.split('*').map(escapeRegExp).join('.*')}$`, 's'));
  return (name) => patterns.some((pattern) => pattern.test(name));
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
