// The model agent's configuration (AGENT.md §1): found, read and validated once at start. Any
// problem is one line naming the file and the key path, and the process exits 78.
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { z } from 'zod';
import { AgentLoadError } from '../loader-error.js';
import { serverNameClash } from './mcp-names.js';

export const DEFAULT_SYSTEM_PROMPT =
  'You are a helpful assistant working inside turnhost. Use the tools you are given when they help, and ask the user with the clarify tool when a request is ambiguous.';
const DEFAULT_BASE_URL = 'https://api.openai.com/v1';

const globs = z.array(z.string());

const mcpServerSchema = z.strictObject({
  command: z.string().min(1),
  args: z.array(z.string()).default([]),
  env: z.record(z.string(), z.string()).default({}),
  cwd: z.string().optional(),
  enabled: z.boolean().default(true),
  timeout_s: z.number().positive().default(60),
  tools: z.strictObject({ include: globs.optional(), exclude: globs.default([]) }).prefault({}),
});

const approvalSchema = z.strictObject({
  default: z.enum(['ask', 'allow']).default('ask'),
  allow: globs.default([]),
  ask: globs.default([]),
  deny: globs.default([]),
});

const fileSchema = z.strictObject({
  model: z.string().min(1).optional(),
  base_url: z.string().min(1).optional(),
  api_key_env: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected the NAME of an environment variable')
    .default('OPENAI_API_KEY'),
  system_prompt: z.string().default(DEFAULT_SYSTEM_PROMPT),
  personalities: z.record(z.string(), z.string()).default({}),
  temperature: z.number().optional(),
  max_tokens: z.number().int().positive().optional(),
  context_tokens: z.number().int().positive().default(128_000),
  compress_at: z.number().min(0).max(1).default(0.75),
  keep_recent: z.number().int().min(0).default(6),
  max_tool_rounds: z.number().int().positive().default(25),
  request_timeout_s: z.number().positive().default(600),
  idle_timeout_s: z.number().positive().default(60),
  max_retries: z.number().int().min(0).default(2),
  approval: approvalSchema.prefault({}),
  mcp_servers: z.record(z.string(), mcpServerSchema).default({}),
});

type FileConfig = z.infer<typeof fileSchema>;
export type McpServerConfig = z.infer<typeof mcpServerSchema>;
export type ApprovalConfig = z.infer<typeof approvalSchema>;

/** The validated file, with the model and base URL resolved from the environment where it gives none. */
export type ModelConfig = Omit<FileConfig, 'model' | 'base_url'> & { model: string; base_url: string; file: string | null };

export interface ConfigSource {
  home: string;
  /** `--agent-config FILE` */
  flag?: string | undefined;
  env: Readonly<Record<string, string | undefined>>;
}

/** The file the config comes from: the flag, else $TURNHOST_AGENT_CONFIG (both must exist), else <home>/agent.json if present. */
export function configFile(source: ConfigSource): { path: string; required: boolean } {
  const named = source.flag ?? source.env['TURNHOST_AGENT_CONFIG'];
  if (named !== undefined && named !== '') return { path: resolve(named), required: true };
  return { path: join(source.home, 'agent.json'), required: false };
}

export function loadModelConfig(source: ConfigSource): ModelConfig {
  const { path, required } = configFile(source);
  const text = readConfigText(path, required);
  let raw: unknown = {};
  if (text !== null) {
    try {
      raw = JSON.parse(text);
    } catch (err) {
      throw new AgentLoadError(`${path}: not JSON: ${(err as Error).message}`);
    }
  }
  const parsed = fileSchema.safeParse(raw);
  if (!parsed.success) throw new AgentLoadError(`${path}: ${describeIssue(parsed.error.issues[0]!)}`);
  const model = parsed.data.model ?? nonEmpty(source.env['TURNHOST_MODEL']);
  if (model === undefined) {
    throw new AgentLoadError(`${path}: model: no model given: set "model" in the agent config or $TURNHOST_MODEL`);
  }
  const baseUrl = parsed.data.base_url ?? nonEmpty(source.env['OPENAI_BASE_URL']) ?? DEFAULT_BASE_URL;
  const clash = serverNameClash(Object.keys(parsed.data.mcp_servers));
  if (clash !== null) throw new AgentLoadError(`${path}: mcp_servers: ${clash}`);
  const servers = placeServers(parsed.data.mcp_servers, text === null ? source.home : dirname(path), source.home);
  return { ...parsed.data, mcp_servers: servers, model, base_url: baseUrl.replace(/\/+$/, ''), file: text === null ? null : path };
}

/**
 * Where each MCP server runs: its `cwd`, else the home, never the folder the daemon was started
 * from. Relative paths in the file (`cwd`, a `command` with a slash) are read from the file's folder.
 */
function placeServers(servers: Record<string, McpServerConfig>, base: string, home: string): Record<string, McpServerConfig> {
  const placed: Record<string, McpServerConfig> = {};
  for (const [name, server] of Object.entries(servers)) {
    const command = server.command.includes('/') && !isAbsolute(server.command) ? resolve(base, server.command) : server.command;
    placed[name] = { ...server, command, cwd: server.cwd === undefined ? home : resolve(base, server.cwd) };
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

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
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
