// Where sessions work (AGENT.md §7): workspaces belong to people. Each person has
// `<workspaces_root>/<person>/` (the home's owner is `owner`); a session created without a folder
// works in `<workspaces_root>/<person>/<session id>`, but one stored before workspaces belonged to
// people keeps the folder it had, `<workspaces_root>/<session id>`.
import { createHash } from 'node:crypto';
import { join } from 'node:path';

/** A name (a session id, a person) as one safe path segment; names with other characters get a digest, so two never share a folder. */
export function folderName(name: string): string {
  if (/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/.test(name)) return name;
  return `${name.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 60)}-${createHash('sha256').update(name).digest('hex').slice(0, 16)}`;
}

/** A person's own workspace, the only place a member may name a session's folder in. */
export function personWorkspace(root: string, person: string): string {
  return join(root, folderName(person));
}

/** The folder turnhost makes for a session that names none. */
export function defaultWorkspace(root: string, sid: string, whose: { person: string; flat: boolean }): string {
  return whose.flat ? join(root, folderName(sid)) : join(personWorkspace(root, whose.person), folderName(sid));
}
