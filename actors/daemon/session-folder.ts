// Who chooses where a session works (AGENT.md §7): an admin (and the home's owner) names any
// folder; a member only one below their own workspace `<workspaces_root>/<person>/`, judged after
// symbolic links are resolved (a link planted in a workspace must not lead a session out of it),
// and never another session's default folder there. The folder is kept as its real path, and the
// sandbox binds it from an fd checked against that path (agents/sandbox/sandbox.ts), so a link
// put in its way later changes nothing: what was judged is what is bound.
import { mkdirSync, realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { ErrorCodes, RpcError } from '../../protocol/client-rpc.js';
import { personWorkspace } from '../../agents/sandbox/workspaces.js';
import type { Identity } from './identity.js';

/** What a member may not name: a folder below theirs that is the default folder of a session (its name a session id). */
export type IsSession = (name: string) => Promise<boolean>;

/** The folder a session created with `cwd` by `identity` works in; -32602 when it may not. */
export async function sessionFolder(cwd: string, identity: Identity, workspacesRoot: string, isSession: IsSession): Promise<string> {
  if (!isAbsolute(cwd)) throw new RpcError(ErrorCodes.invalidParams, 'cwd must be an absolute path');
  if (identity.admin) return realOfNearest(resolve(cwd));
  const workspace = personWorkspace(workspacesRoot, identity.user);
  mkdirSync(workspace, { recursive: true, mode: 0o700 });
  const own = realpathSync(workspace);
  const real = realOfNearest(resolve(cwd));
  const outside = (): RpcError => new RpcError(ErrorCodes.invalidParams, `cwd outside your workspace: a member's session works below ${workspace}`);
  if (!real.startsWith(`${own}/`)) throw outside();
  const first = real.slice(own.length + 1).split('/')[0]!;
  if (await isSession(first)) throw new RpcError(ErrorCodes.invalidParams, `cwd outside your workspace: ${join(workspace, first)} is the folder of session ${first}`);
  mkdirSync(real, { recursive: true, mode: 0o700 });
  // Made now, so a link put in its way since is seen here rather than bound.
  const made = realpathSync(real);
  if (made !== real) throw outside();
  return made;
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
