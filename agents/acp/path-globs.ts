// Path globs of `acp.home_sync.exclude` (AGENT.md §6), relative to a home: `*` matches within one
// folder's name, `**` any number of folders (`.cache/**`, `**/node_modules/**`); a folder that
// matches is left out with all it holds.

/** True when the path, or a folder it lies in, matches one of the globs. */
export function pathGlobs(globs: readonly string[]): (path: string) => boolean {
  const patterns = globs.map(toRegExp);
  return (path) => {
    const parts = path.split('/');
    for (let depth = 1; depth <= parts.length; depth++) {
      const prefix = parts.slice(0, depth).join('/');
      if (patterns.some((pattern) => pattern.test(prefix))) return true;
    }
    return false;
  };
}

function toRegExp(glob: string): RegExp {
  let source = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*' && glob[i + 1] === '*') {
      // `**/` is any number of folders (none too); a trailing `**` is anything below.
      const slash = glob[i + 2] === '/';
      source += slash ? '(?:[^/]+/)*' : '.*';
      i += slash ? 2 : 1;
    } else if (c === '*') source += '[^/]*';
    else source += c.replace(/[.+?^${}()|[\]\\]/g, '\\$&');
  }
  // `dir/**` leaves out the folder itself too.
  if (source.endsWith('/.*')) source = `${source.slice(0, -3)}(?:/.*)?`;
  return new RegExp(`^${source}$`, 's');
}
