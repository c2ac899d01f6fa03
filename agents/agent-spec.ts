// How `--agent` names an agent: a built-in name (script, openai, acp) or a path to an ES module,
// made absolute where the command ran, since a daemon and its host run in the home. Apart from the
// loader, so that the command line reads it without loading the agents.
import { isAbsolute, resolve } from 'node:path';

export function looksLikePath(spec: string): boolean {
  return spec.includes('/') || spec.includes('\\') || /\.(c|m)?js$/.test(spec);
}

/** A module path made absolute against the folder the command was run from; a built-in name as it is. */
export function resolveAgentSpec(spec: string, cwd = process.cwd()): string {
  return looksLikePath(spec) && !isAbsolute(spec) ? resolve(cwd, spec) : spec;
}
