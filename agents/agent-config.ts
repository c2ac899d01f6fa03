// The agent config file (AGENT.md §1, §6, §8): found and read once at start, shared by the agents
// that read it. Each agent validates its own keys; what both use (the approval policy, MCP
// servers) is defined once here. Any problem is one line naming the file and the key path. A file
// with a catalogue (`agents`) gives each agent its definition over the top level's keys
// (agents/catalogue-config.ts); an agent reads it as it would read a file of its own.
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { z } from 'zod';
import { AgentLoadError } from './loader-error.js';

export interface ConfigSource {
  home: string;
  /** `--agent-config FILE` */
  flag?: string | undefined;
  env: Readonly<Record<string, string | undefined>>;
  /** The catalogue's agent whose config this is (AGENT.md §8); absent: the file's top level. */
  definition?: string | undefined;
}

const globs = z.array(z.string());

export const mcpServerSchema = z.strictObject({
  command: z.string().min(1),
  args: z.array(z.string()).default([]),
  env: z.record(z.string(), z.string()).default({}),
  cwd: z.string().optional(),
  enabled: z.boolean().default(true),
  timeout_s: z.number().positive().default(60),
  tools: z.strictObject({ include: globs.optional(), exclude: globs.default([]) }).prefault({}),
});

export const approvalSchema = z.strictObject({
  default: z.enum(['ask', 'allow']).default('ask'),
  allow: globs.default([]),
  ask: globs.default([]),
  deny: globs.default([]),
});

export type McpServerConfig = z.infer<typeof mcpServerSchema>;
export type ApprovalConfig = z.infer<typeof approvalSchema>;

/** The NAME of an environment variable. */
export const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected the NAME of an environment variable');

/** The file's JSON, where it was read from, and the folder its relative paths are read from. */
export interface ConfigText {
  path: string;
  /** The parsed file (an agent's definition over the top level's keys); `{}` when the default file is absent. */
  raw: unknown;
  /** False when no file was read (the default file is absent). */
  found: boolean;
  base: string;
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
  const text = readConfigText(path, required);
  if (text === null) return { path, raw: {}, found: false, base: source.home, at: '' };
  try {
    return { path, raw: JSON.parse(text), found: true, base: dirname(path), at: '' };
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

/** Validates the config against an agent's schema: the first problem, as `<file>: key.path: what is wrong`. */
export function parseConfig<Schema extends z.ZodType>(schema: Schema, config: ConfigText): z.infer<Schema> {
  const parsed = schema.safeParse(config.raw);
  if (!parsed.success) throw new AgentLoadError(`${config.path}: ${config.at}${describeIssue(parsed.error.issues[0]!)}`);
  return parsed.data;
}

/** A problem of one key of the config, as `<file>: key.path: what is wrong`. */
export function configProblem(config: ConfigText, key: string, what: string): AgentLoadError {
  return new AgentLoadError(`${config.path}: ${config.at}${key}: ${what}`);
}

/** A command with a slash, relative, is read from the config file's folder; a bare name is looked up in PATH. */
export function placeCommand(command: string, base: string): string {
  return command.includes('/') && !isAbsolute(command) ? resolve(base, command) : command;
}

/**
 * Relative paths in the file (`cwd`, a `command` with a slash) are read from the file's folder.
 * A server without `cwd` works in its sandbox's home, or unconfined in the turnhost home, never
 * in the folder the daemon was started from (agents/sandbox/sandbox.ts).
 */
export function placeServers(servers: Record<string, McpServerConfig>, base: string): Record<string, McpServerConfig> {
  const placed: Record<string, McpServerConfig> = {};
  for (const [name, server] of Object.entries(servers)) {
    placed[name] = { ...server, command: placeCommand(server.command, base), ...(server.cwd === undefined ? {} : { cwd: resolve(base, server.cwd) }) };
  }
  return placed;
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

/** `key.path: what is wrong`, in words a person editing the file can act on. */
function describeIssue(issue: z.core.$ZodIssue): string {
  const path = issue.path.map(String);
  if (issue.code === 'unrecognized_keys') {
    return `${[...path, issue.keys[0]].join('.')}: unknown key`;
  }
  const where = path.length > 0 ? path.join('.') : '(top level)';
  if (issue.code === 'invalid_type') {
    return `${where}: expected ${article(issue.expected)}`;
  }
  return `${where}: ${issue.message}`;
}

function article(type: string): string {
  const words: Record<string, string> = { string: 'a string', number: 'a number', boolean: 'true or false', object: 'an object', array: 'a list', int: 'an integer' };
  return words[type] ?? type;
}
