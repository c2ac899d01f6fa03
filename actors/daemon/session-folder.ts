// Who chooses where a session works (AGENT.md §7): an admin (and the home's owner) names any
// folder; a member only one below `sandbox.workspaces_root`, judged after symbolic links are
// resolved (a link planted in a workspace must not lead a session out of it). The folder is kept
// as its real path, so a link put in its way later is seen when its sandbox is made.
import { mkdirSync, realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { ErrorCodes, RpcError } from '../../protocol/client-rpc.js';
import type { Identity } from './identity.js';

/** The folder a session created with `cwd` by `identity` works in; -32602 when it may not. */
export function sessionFolder(cwd: string, identity: Identity, workspacesRoot: string): string {
  if (!isAbsolute(cwd)) throw new RpcError(ErrorCodes.invalidParams, 'cwd must be an absolute path');
  if (identity.admin) return realOfNearest(resolve(cwd));
  mkdirSync(workspacesRoot, { recursive: true, mode: 0o700 });
  const root = realpathSync(workspacesRoot);
  const real = realOfNearest(resolve(cwd));
  if (!real.startsWith(`${root}/`)) throw new RpcError(ErrorCodes.invalidParams, `cwd outside the workspaces: a member's session works below ${workspacesRoot}`);
  mkdirSync(real, { recursive: true, mode: 0o700 });
  return realpathSync(real);
}

/** The path with the links of its longest existing part resolved; the rest, which does not exist yet, as it is. */
function realOfNearest(path: string): string {
  const missing: string[] = [];
  for (let at = path; ; at = dirname(at)) {
    try {
      return join(realpathSync(at), ...missing.reverse());
    } catch {
      if (at === dirname(at)) return path;
      missing.push(basename(at));
    }
  }
}
