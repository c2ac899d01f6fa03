// Resolves `--agent NAME|PATH` to an agent: a built-in name, or a user's ES module whose
// default export (or `agent` export) is an agent or a function that returns one.
import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isAgent, type Agent } from './agent.js';
import { AgentLoadError } from './loader-error.js';
import type { ConfigSource } from './config-file.js';
import { needsSandbox, readCatalogue, type CheckedCatalogue } from './catalogue-config.js';
import type { GuestAgentOptions } from './acp/guest-agent.js';
import { scriptAgent } from './script.js';
import { looksLikePath } from './agent-spec.js';

/** What a built-in agent may need to start: its config (AGENT.md §1, §6), and what the catalogue shares (§8). */
export interface AgentSetup extends GuestAgentOptions {}

// The model agent (and with it the openai and MCP SDKs, and zod for its config) is loaded only by
// a process that runs it or checks its config: the script agent's host never pays for it, and a
// host restarted after a crash says hello sooner.
const BUILT_IN: Record<string, (setup: AgentSetup) => Agent | Promise<Agent>> = {
  script: () => scriptAgent,
  openai: async (setup) => (await import('./model/model-agent.js')).createModelAgent(setup),
  acp: async (setup) => (await import('./acp/guest-agent.js')).createGuestAgent(setup),
};

export { AgentLoadError };

export async function loadAgent(spec: string, setup: AgentSetup, cwd = process.cwd()): Promise<Agent> {
  if (!looksLikePath(spec)) {
    const create = BUILT_IN[spec];
    if (create === undefined) {
      throw new AgentLoadError(`unknown agent "${spec}" (built in: ${Object.keys(BUILT_IN).join(', ')}; or give a path to a module)`);
    }
    return create(setup);
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

/**
 * The catalogue the config gives (AGENT.md §8), validated whole, and the sandbox tried when an
 * agent of it starts processes (AGENT.md §7): `start`, a reload, and a host started alone refuse a
 * broken config, or a machine that cannot make the sandbox, with AgentLoadError (exit 78). A daemon
 * validates the file alone (readCatalogue), and tries the sandbox once its first host said hello
 * (bin/commands/daemon.ts).
 */
export async function checkedCatalogue(spec: string | undefined, source: ConfigSource): Promise<CheckedCatalogue> {
  const catalogue = await readCatalogue(spec, source);
  if (!needsSandbox(catalogue.definitions.values())) return { catalogue, mechanism: null };
  return { catalogue, mechanism: await (await import('./sandbox/sandbox-try.js')).triedSandbox(catalogue.file) };
}
