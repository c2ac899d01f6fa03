// Resolves `--agent NAME|PATH` to an agent: a built-in name, or a user's ES module whose
// default export (or `agent` export) is an agent or a function that returns one.
import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isAgent, type Agent } from './agent.js';
import { AgentLoadError } from './loader-error.js';
import type { ConfigSource } from './model/config.js';
import type { ModelAgentOptions } from './model/model-agent.js';
import { scriptAgent } from './script.js';
import type { SandboxConfig } from './sandbox/sandbox-config.js';

/** What a built-in agent may need to start: the model agent reads its config (AGENT.md §1). */
export interface AgentSetup extends ModelAgentOptions {}

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

/** What the agent needs from the environment (AGENT.md §1, §6). */
export interface AgentEnvironment {
  /** Variables beyond the host's allowlist: the model agent's base URL and key variable, a guest's `pass_env`. */
  names: string[];
  /** What must never be written anywhere: the model agent's API key, a guest's secrets. */
  secrets: string[];
}

/**
 * Read from the agent's config, once: reading it validates the config, so a daemon or `start`
 * refuses a broken one (AgentLoadError) before any host runs.
 */
export async function agentEnvironment(spec: string, source: ConfigSource): Promise<AgentEnvironment> {
  if (spec === 'acp') {
    const guest = (await import('./acp/guest-config.js')).loadGuestConfig(source);
    await sandboxRuns(guest.file, guest.sandbox);
    return { names: guest.passEnv, secrets: guest.secrets };
  }
  if (spec !== 'openai') return { names: [], secrets: [] };
  const config = (await import('./model/config.js')).loadModelConfig(source);
  if (Object.values(config.mcp_servers).some((server) => server.enabled)) await sandboxRuns(config.file ?? 'agent.json', config.sandbox);
  const key = source.env[config.api_key_env];
  return { names: ['OPENAI_BASE_URL', config.api_key_env], secrets: key ? [key] : [] };
}

/** An agent that starts processes needs its sandbox (AGENT.md §7): a machine that cannot make one is refused before any host runs. */
async function sandboxRuns(file: string, sandbox: SandboxConfig): Promise<void> {
  if (sandbox.mode !== 'required') return;
  const { sandboxMechanism, SandboxUnavailable } = await import('./sandbox/sandbox.js');
  try {
    await sandboxMechanism();
  } catch (err) {
    throw err instanceof SandboxUnavailable ? new AgentLoadError(`${file}: ${err.message}`) : err;
  }
}
