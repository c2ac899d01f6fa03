// Resolves `--agent NAME|PATH` to an agent: a built-in name, or a user's ES module whose
// default export (or `agent` export) is an agent or a function that returns one.
import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isAgent, type Agent } from './agent.js';
import { scriptAgent } from './script.js';

const BUILT_IN: Record<string, Agent> = { script: scriptAgent };

/** A configuration error: the process exits with EX_CONFIG (78). */
export class AgentLoadError extends Error {
  readonly exitCode = 78;
}

function looksLikePath(spec: string): boolean {
  return spec.includes('/') || spec.includes('\\') || /\.(c|m)?js$/.test(spec);
}

export async function loadAgent(spec: string, cwd = process.cwd()): Promise<Agent> {
  if (!looksLikePath(spec)) {
    const agent = BUILT_IN[spec];
    if (agent === undefined) {
      throw new AgentLoadError(`unknown agent "${spec}" (built in: ${Object.keys(BUILT_IN).join(', ')}; or give a path to a module)`);
    }
    return agent;
  }
  const file = isAbsolute(spec) ? spec : resolve(cwd, spec);
  if (!existsSync(file)) throw new AgentLoadError(`agent module not found: ${file}`);
  let module: Record<string, unknown>;
  try {
    module = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (err) {
    throw new AgentLoadError(`agent module ${file} failed to load: ${(err as Error).message}`);
  }
  const exported = module['default'] ?? module['agent'];
  const agent = typeof exported === 'function' ? await (exported as () => unknown)() : exported;
  if (!isAgent(agent)) {
    throw new AgentLoadError(
      `agent module ${file} does not export an agent (a default export with a name and a runTurn function, or a function returning one)`,
    );
  }
  return agent;
}
