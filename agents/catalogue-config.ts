// The catalogue of agents one daemon hosts (AGENT.md §8), read from the agent config and validated
// whole: `agents` (name → definition) and `default_agent`, each definition a single agent's config
// (its `kind` and the keys that kind reads, over the top level's) plus who it is for. A file
// without `agents` is a catalogue of the one agent `--agent` names, under that name. Any problem
// is one line naming the file and the key path (`agent.json: agents.codex.acp.command: …`), and a
// daemon or host exits 78 with it; a reload is refused with it.
import { createHash } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { basename, extname, isAbsolute, resolve } from 'node:path';
import { configProblem, isPlainObject, readAgentConfig, readWholeFile, type ConfigSource, type ConfigText } from './config-file.js';
import { AgentLoadError } from './loader-error.js';

/** A catalogue's name for an agent: what a session stores, and what people pick. */
export const AGENT_NAME = /^[a-z0-9][a-z0-9_-]{0,39}$/;
export const BUILT_IN_KINDS = ['script', 'openai', 'acp'] as const;
const DEFAULT_MAX_LIVE_GUESTS = 16;

/** What an agent needs of the daemon's environment (AGENT.md §1, §6). */
export interface AgentEnvironment {
  /** Variables beyond the host's allowlist: the model agent's base URL and key variable, a guest's `pass_env`. */
  names: string[];
  /** What must never be written anywhere: the model agent's API key, a guest's secrets. */
  secrets: string[];
}

export interface AgentDefinition {
  name: string;
  /** `script`, `openai`, `acp`, or the absolute path of a module. */
  kind: string;
  label: string;
  description: string;
  /** Whether members may choose it (admins and the home's owner always may). */
  members: boolean;
  /** `openai` only: the models a person may pick for a session (the first is its own model); null otherwise. */
  models: string[] | null;
  /** A folder a new agent home starts as a copy of; null: it starts empty. */
  homeTemplate: string | null;
  /** Where the agent reads its own config: with `definition` set in a catalogue. */
  source: ConfigSource;
  /** Whether it starts processes its sandbox confines (a guest; a model agent with MCP servers), and the sandbox's mode. */
  sandbox: { startsProcesses: boolean; mode: 'required' | 'off' };
  environment: AgentEnvironment;
  /** Changes when anything of the definition does: an agent made from an older one is retired at a reload. */
  digest: string;
}

export interface CatalogueConfig {
  file: string;
  /** The file's text as validated (null: no file): every definition's source reads this one. */
  text: string | null;
  /** The file has `agents`; else it is the one agent `--agent` names, as before there were several. */
  isCatalogue: boolean;
  defaultAgent: string;
  definitions: ReadonlyMap<string, AgentDefinition>;
  /**
   * Guest sessions live at once across every guest agent; null in a file without `agents` that
   * does not give it: its one agent's `acp.max_live_sessions` bounds it alone, as before catalogues.
   */
  maxLiveGuests: number | null;
  /** Of the whole catalogue: `turnhost cluster` shows each node's. */
  digest: string;
}

/** Whether an agent starts processes in a `required` sandbox (AGENT.md §7): then the sandbox is tried at start. */
export function needsSandbox(definitions: Iterable<Pick<AgentDefinition, 'sandbox'>>): boolean {
  return [...definitions].some((d) => d.sandbox.startsProcesses && d.sandbox.mode === 'required');
}

/** A catalogue validated whole, with bubblewrap's name and version when an agent of it needs the sandbox. */
export interface CheckedCatalogue {
  catalogue: CatalogueConfig;
  mechanism: string | null;
}

/** The catalogue's keys of the file, checked by hand: a script agent's host loads no schema library (test: cli). */
interface CatalogueFile {
  agents?: Record<string, DefinitionFile>;
  default_agent?: string;
  max_live_guests?: number;
  home_template?: string;
}

interface DefinitionFile {
  kind: string;
  label?: string;
  description: string;
  members: boolean;
  models?: string[];
  home_template?: string;
}

function parseCatalogue(file: ConfigText): CatalogueFile {
  const raw = isPlainObject(file.raw) ? file.raw : {};
  const problem = (key: string, what: string): AgentLoadError => configProblem(file, key, what);
  const top: CatalogueFile = {};
  const maxLiveGuests = optionalOf(raw, 'max_live_guests', isPositiveInteger, 'expected a positive integer', problem);
  if (maxLiveGuests !== undefined) top.max_live_guests = maxLiveGuests;
  const template = optionalOf(raw, 'home_template', isText, 'expected a string', problem);
  if (template !== undefined) top.home_template = template;
  const chosen = optionalOf(raw, 'default_agent', isText, 'expected a string', problem);
  if (chosen !== undefined) top.default_agent = chosen;
  if (raw['agents'] === undefined) return top;
  if (!isPlainObject(raw['agents'])) throw problem('agents', 'expected an object of name → definition');
  top.agents = {};
  for (const [name, own] of Object.entries(raw['agents'])) {
    if (!AGENT_NAME.test(name)) throw problem(`agents.${name}`, 'a name is lower-case letters, digits, - and _ (at most 40), starting with a letter or digit');
    if (!isPlainObject(own)) throw problem(`agents.${name}`, 'expected an object');
    const at = (key: string, what: string): AgentLoadError => problem(`agents.${name}.${key}`, what);
    const kind = own['kind'];
    if (!isText(kind)) throw at('kind', kind === undefined ? 'missing: openai, acp, script or a module\'s path' : 'expected a string');
    const definition: DefinitionFile = {
      kind,
      description: optionalOf(own, 'description', (v) => typeof v === 'string', 'expected a string', at) ?? '',
      members: optionalOf(own, 'members', (v) => typeof v === 'boolean', 'expected true or false', at) ?? true,
    };
    const label = optionalOf(own, 'label', isText, 'expected a string', at);
    if (label !== undefined) definition.label = label;
    const models = optionalOf(own, 'models', (v): v is string[] => Array.isArray(v) && v.length > 0 && v.every(isText), 'expected a list of model names', at);
    if (models !== undefined) definition.models = models;
    const ownTemplate = optionalOf(own, 'home_template', isText, 'expected a string', at);
    if (ownTemplate !== undefined) definition.home_template = ownTemplate;
    top.agents[name] = definition;
  }
  return top;
}

function optionalOf<T>(object: Record<string, unknown>, key: string, is: (value: unknown) => value is T, expected: string, problem: (key: string, what: string) => AgentLoadError): T | undefined;
function optionalOf<T>(object: Record<string, unknown>, key: string, is: (value: unknown) => boolean, expected: string, problem: (key: string, what: string) => AgentLoadError): T | undefined;
function optionalOf<T>(object: Record<string, unknown>, key: string, is: (value: unknown) => boolean, expected: string, problem: (key: string, what: string) => AgentLoadError): T | undefined {
  const value = object[key];
  if (value === undefined) return undefined;
  if (!is(value)) throw problem(key, expected);
  return value as T;
}

function isText(value: unknown): value is string {
  return typeof value === 'string' && value !== '';
}

function isPositiveInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value > 0;
}

/**
 * The catalogue the file gives, validated whole. `spec` is `--agent`: without `agents` the one
 * agent it names (default `script`); with `agents` the default agent, which must be in it.
 */
export async function readCatalogue(spec: string | undefined, source: ConfigSource): Promise<CatalogueConfig> {
  const file = readWholeFile(source);
  const top = parseCatalogue(file);
  const entries = top.agents === undefined ? singleAgent(spec, top, file) : catalogueEntries(spec, top, file);
  const definitions = new Map<string, AgentDefinition>();
  const validated: ConfigSource = { ...source, text: file.text };
  for (const entry of entries) definitions.set(entry.name, await defineAgent(entry, validated, file));
  const defaultAgent = entries[0]!.name;
  const maxLiveGuests = top.max_live_guests ?? (top.agents === undefined ? null : DEFAULT_MAX_LIVE_GUESTS);
  return {
    file: file.path,
    text: file.text,
    isCatalogue: top.agents !== undefined,
    defaultAgent,
    definitions,
    maxLiveGuests,
    digest: digestOf({ defaultAgent, agents: [...definitions.values()].map((d) => [d.name, d.digest]), maxLiveGuests }),
  };
}

/** What a whole catalogue needs of the environment: every agent's names and secrets, once. */
export function catalogueEnvironment(catalogue: CatalogueConfig): AgentEnvironment {
  const all = [...catalogue.definitions.values()].map((d) => d.environment);
  return { names: [...new Set(all.flatMap((e) => e.names))], secrets: [...new Set(all.flatMap((e) => e.secrets))] };
}

/** The catalogue's name of the one agent `--agent` names: a built-in's, or a module file's base name. */
export function singleAgentName(spec: string): string {
  return (BUILT_IN_KINDS as readonly string[]).includes(spec) ? spec : basename(spec, extname(spec));
}

interface Entry {
  name: string;
  kind: string;
  label?: string | undefined;
  description: string;
  members: boolean;
  models?: string[] | undefined;
  homeTemplate?: string | undefined;
  /** Set in a catalogue: the agent reads its definition over the top level. */
  definition?: string;
}

function singleAgent(spec: string | undefined, top: CatalogueFile, file: ConfigText): Entry[] {
  if (top.default_agent !== undefined) throw configProblem(file, 'default_agent', 'names an agent of "agents", which this file does not have');
  const kind = spec ?? 'script';
  return [{ name: singleAgentName(kind), kind: kindOf(kind, process.cwd(), (what) => new AgentLoadError(what)), description: '', members: true, homeTemplate: top.home_template }];
}

/** The catalogue's entries, the default first. */
function catalogueEntries(spec: string | undefined, top: CatalogueFile, file: ConfigText): Entry[] {
  const agents = top.agents!;
  const names = Object.keys(agents);
  if (names.length === 0) throw configProblem(file, 'agents', 'names no agent');
  const chosen = spec ?? top.default_agent ?? names[0]!;
  if (!names.includes(chosen)) {
    const why = `${chosen} is not in the catalogue (agents: ${names.join(', ')})`;
    throw spec !== undefined ? new AgentLoadError(`${file.path}: --agent ${why}`) : configProblem(file, 'default_agent', why);
  }
  return [chosen, ...names.filter((name) => name !== chosen)].map((name) => {
    const own = agents[name]!;
    const homeTemplate = own.home_template ?? top.home_template;
    return { name, kind: kindOf(own.kind, file.base, (what) => configProblem(file, `agents.${name}.kind`, what)), label: own.label, description: own.description, members: own.members, models: own.models, homeTemplate, definition: name };
  });
}

/**
 * A built-in name as it is; a module path made absolute (against the file's folder in a catalogue).
 * A word that is neither (no slash, no `.js`) is a built-in name misspelt.
 */
function kindOf(kind: string, base: string, problem: (what: string) => AgentLoadError): string {
  if ((BUILT_IN_KINDS as readonly string[]).includes(kind)) return kind;
  if (!/[/\\]|\.(c|m)?js$/.test(kind)) throw problem(`unknown agent "${kind}" (built in: ${BUILT_IN_KINDS.join(', ')}; or give a path to a module)`);
  return isAbsolute(kind) ? kind : resolve(base, kind);
}

/** Validates the agent's own config as its kind reads it, and what it needs of the environment. */
async function defineAgent(entry: Entry, given: ConfigSource, file: ConfigText): Promise<AgentDefinition> {
  const source: ConfigSource = { ...given, definition: entry.definition };
  const at = (key: string, what: string): AgentLoadError => configProblem({ ...file, at: entry.definition === undefined ? '' : `agents.${entry.name}.` }, key, what);
  const own = readAgentConfig(source);
  const checked = await checkKind(entry, source, at);
  if (entry.models !== undefined && entry.kind !== 'openai') throw at('models', 'only an openai agent has models to pick from');
  if (entry.definition !== undefined && isPlainObject(own.raw) && isPlainObject(own.raw['sandbox']) && ownSandboxKey(file, entry.name, 'workspaces_root')) {
    throw at('sandbox.workspaces_root', 'give it at the top level: workspaces belong to people, not to agents (AGENT.md §7)');
  }
  const homeTemplate = entry.homeTemplate === undefined ? null : resolve(file.base, entry.homeTemplate);
  if (homeTemplate !== null && !isFolder(homeTemplate)) throw at('home_template', `${homeTemplate} is not a folder`);
  const models = entry.kind === 'openai' ? (entry.models ?? [checked.model!]) : null;
  const described = { kind: entry.kind, label: entry.label ?? entry.name, description: entry.description, members: entry.members, models, homeTemplate };
  return {
    name: entry.name,
    ...described,
    source,
    sandbox: checked.sandbox,
    environment: checked.environment,
    digest: digestOf({ ...described, config: own.raw }),
  };
}

interface KindCheck {
  sandbox: AgentDefinition['sandbox'];
  environment: AgentEnvironment;
  /** The model agent's own model. */
  model?: string;
}

/**
 * The kind's own validation of its config (exit 78 naming the key), read the way the agent will
 * read it. The model and guest agents' modules (and their schema library) are loaded only for them.
 */
async function checkKind(entry: Entry, source: ConfigSource, at: (key: string, what: string) => AgentLoadError): Promise<KindCheck> {
  switch (entry.kind) {
    case 'openai': {
      const config = (await import('./model/config.js')).loadModelConfig(source);
      const key = source.env[config.api_key_env];
      return {
        model: config.model,
        sandbox: { startsProcesses: Object.values(config.mcp_servers).some((server) => server.enabled), mode: config.sandbox.mode },
        environment: { names: ['OPENAI_BASE_URL', config.api_key_env], secrets: key ? [key] : [] },
      };
    }
    case 'acp': {
      const guest = (await import('./acp/guest-config.js')).loadGuestConfig(source);
      return { sandbox: { startsProcesses: true, mode: guest.sandbox.mode }, environment: { names: guest.passEnv, secrets: guest.secrets } };
    }
    case 'script':
      return NO_NEEDS;
    default:
      if (!existsSync(entry.kind)) throw at('kind', `agent module not found: ${entry.kind} (built in: ${BUILT_IN_KINDS.join(', ')}; or a module's path)`);
      return NO_NEEDS;
  }
}

const NO_NEEDS: KindCheck = { sandbox: { startsProcesses: false, mode: 'required' }, environment: { names: [], secrets: [] } };

/** Whether the definition itself (not the top level) gives `sandbox.<key>`. */
function ownSandboxKey(file: ConfigText, name: string, key: string): boolean {
  const agents = isPlainObject(file.raw) ? file.raw['agents'] : undefined;
  const own = isPlainObject(agents) ? agents[name] : undefined;
  const sandbox = isPlainObject(own) ? own['sandbox'] : undefined;
  return isPlainObject(sandbox) && key in sandbox;
}

function isFolder(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function digestOf(value: unknown): string {
  return createHash('sha256').update(JSON.stringify(value)).digest('hex').slice(0, 16);
}
