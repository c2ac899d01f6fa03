// The agent config file (AGENT.md §1, §6, §8): found and read once at start, shared by the agents
// that read it (their schemas: agents/agent-config.ts). Loads no schema library: a script agent's
// host reads its catalogue from here and nothing more. A file with a catalogue (`agents`) gives
// each agent its definition over the top level's keys (agents/catalogue-config.ts); an agent reads
// it as it would read a file of its own.
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { AgentLoadError } from './loader-error.js';

export interface ConfigSource {
  home: string;
  /** `--agent-config FILE` */
  flag?: string | undefined;
  env: Readonly<Record<string, string | undefined>>;
  /** The catalogue's agent whose config this is (AGENT.md §8); absent: the file's top level. */
  definition?: string | undefined;
  /**
   * The file's text as the catalogue was validated from it (null: no file): an agent made later
   * reads this, not the file as it is by then, which may have changed without a reload.
   */
  text?: string | null | undefined;
}

/** The file's JSON, where it was read from, and the folder its relative paths are read from. */
export interface ConfigText {
  path: string;
  /** The parsed file (an agent's definition over the top level's keys); `{}` when the default file is absent. */
  raw: unknown;
  /** False when no file was read (the default file is absent). */
  found: boolean;
  base: string;
  /** The text `raw` was parsed from; null when no file was read. */
  text: string | null;
  /** Where the keys of `raw` lie in the file: `agents.<name>.` for a catalogue's agent, else empty. */
  at: string;
}

/** The catalogue's own keys (agents/catalogue-config.ts), at the top level: no agent reads them. */
export const CATALOGUE_TOP_KEYS = ['agents', 'default_agent', 'max_live_guests', 'home_template'] as const;
/** A definition's keys that say who it is for, not how it runs: no agent reads them. */
export const DEFINITION_KEYS = ['kind', 'label', 'description', 'members', 'models', 'home_template'] as const;

/** The file the config comes from: the flag, else $TURNHOST_AGENT_CONFIG (both must exist), else <home>/agent.json if present. */
export function configFile(source: ConfigSource): { path: string; required: boolean } {
  const named = source.flag ?? source.env['TURNHOST_AGENT_CONFIG'];
  if (named !== undefined && named !== '') return { path: resolve(named), required: true };
  return { path: join(source.home, 'agent.json'), required: false };
}

/** The config an agent reads: the file's top level, or its definition in the catalogue over it. */
export function readAgentConfig(source: ConfigSource): ConfigText {
  const file = readWholeFile(source);
  if (!isPlainObject(file.raw)) return file;
  const catalogue = file.raw['agents'];
  if (source.definition === undefined || !isPlainObject(catalogue)) return { ...file, raw: without(file.raw, CATALOGUE_TOP_KEYS) };
  const own = catalogue[source.definition];
  if (!isPlainObject(own)) throw new AgentLoadError(`${file.path}: agents.${source.definition}: not in the catalogue`);
  return { ...file, raw: definitionOver(without(file.raw, CATALOGUE_TOP_KEYS), without(own, DEFINITION_KEYS)), at: `agents.${source.definition}.` };
}

/** The file as written, every key of it. */
export function readWholeFile(source: ConfigSource): ConfigText {
  const { path, required } = configFile(source);
  const text = source.text !== undefined ? source.text : readConfigText(path, required);
  if (text === null) return { path, raw: {}, found: false, base: source.home, text, at: '' };
  try {
    return { path, raw: JSON.parse(text), found: true, base: dirname(path), text, at: '' };
  } catch (err) {
    throw new AgentLoadError(`${path}: not JSON: ${(err as Error).message}`);
  }
}

/**
 * A definition over the top level's keys (AGENT.md §8), key by key: an object key of both is the
 * top level's with the definition's keys over it (`sandbox.allow_hosts` of a definition replaces
 * the top level's; `sandbox.memory_mb` it does not give is the top level's); any other key of the
 * definition replaces the top level's.
 */
export function definitionOver(top: Readonly<Record<string, unknown>>, own: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...top };
  for (const [key, value] of Object.entries(own)) {
    const under = top[key];
    merged[key] = isPlainObject(under) && isPlainObject(value) ? { ...under, ...value } : value;
  }
  return merged;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function without(object: Readonly<Record<string, unknown>>, keys: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(Object.entries(object).filter(([key]) => !keys.includes(key)));
}

/** A problem of one key of the config, as `<file>: key.path: what is wrong`. */
export function configProblem(config: ConfigText, key: string, what: string): AgentLoadError {
  return new AgentLoadError(`${config.path}: ${config.at}${key}: ${what}`);
}

function readConfigText(path: string, required: boolean): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && !required) return null;
    throw new AgentLoadError(`${path}: cannot read the agent config: ${code ?? (err as Error).message}`);
  }
}

