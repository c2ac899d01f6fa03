// Resolves `--agent NAME|PATH` to an agent: a built-in name, or a user's ES module whose
// default export (or `agent` export) is an agent or a function that returns one.
import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isAgent, type Agent } from './agent.js';
import { AgentLoadError } from './loader-error.js';
import type { ConfigSource } from './config-file.js';
import { catalogueEnvironment, readCatalogue, type AgentEnvironment, type CheckedCatalogue } from './catalogue-config.js';
import type { GuestAgentOptions } from './acp/guest-agent.js';
import { scriptAgent } from './script.js';

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

function looksLikePath(spec: string): boolean {
  return spec.includes('/') || spec.includes('\\') || /\.(c|m)?js$/.test(spec);
}

/** A module path made absolute against the folder the command was run from; a built-in name as it is. */
export function resolveAgentSpec(spec: string, cwd = process.cwd()): string {
  return looksLikePath(spec) && !isAbsolute(spec) ? resolve(cwd, spec) : spec;
}

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
 * The catalogue the config gives (AGENT.md §8), validated whole, with what its agents need from
 * the environment; reading it validates it, so a daemon or `start` refuses a broken one
 * (AgentLoadError, exit 78) before any host runs. An agent that starts processes needs its sandbox
 * (AGENT.md §7): a machine that cannot make one is refused here too.
 */
export async function checkedCatalogue(spec: string | undefined, source: ConfigSource): Promise<CheckedCatalogue> {
  const catalogue = await readCatalogue(spec, source);
  const sandboxed = [...catalogue.definitions.values()].some((d) => d.sandbox.startsProcesses && d.sandbox.mode === 'required');
  return { catalogue, mechanism: sandboxed ? await sandboxRuns(catalogue.file) : null };
}

/** What every agent of the catalogue needs from the environment (AGENT.md §1, §6). */
export async function agentEnvironment(spec: string | undefined, source: ConfigSource): Promise<AgentEnvironment> {
  return catalogueEnvironment((await checkedCatalogue(spec, source)).catalogue);
}

/** bubblewrap's name and version. */
async function sandboxRuns(file: string): Promise<string> {
  const { sandboxMechanism, SandboxUnavailable } = await import('./sandbox/sandbox.js');
  try {
    return await sandboxMechanism();
  } catch (err) {
    throw err instanceof SandboxUnavailable ? new AgentLoadError(`${file}: ${err.message}`) : err;
  }
}
