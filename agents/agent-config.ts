// The agent config's schemas (AGENT.md §1, §6): each agent validates its own keys; what both use
// (the approval policy, MCP servers) is defined once here. Any problem is one line naming the file
// and the key path. Finding and reading the file is agents/config-file.ts.
import { isAbsolute, resolve } from 'node:path';
import { z } from 'zod';
import { AgentLoadError } from './loader-error.js';
import type { ConfigText } from './config-file.js';

export { configProblem, readAgentConfig, type ConfigSource, type ConfigText } from './config-file.js';

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

/** Validates the config against an agent's schema: the first problem, as `<file>: key.path: what is wrong`. */
export function parseConfig<Schema extends z.ZodType>(schema: Schema, config: ConfigText): z.infer<Schema> {
  // Without zod's compiled fast path: a config is parsed once (a start, a reload), and compiling
  // it cost a catalogue of 10 agents 4 of its 17 ms of validation.
  const parsed = schema.safeParse(config.raw, { jitless: true });
  if (!parsed.success) throw new AgentLoadError(`${config.path}: ${config.at}${describeIssue(parsed.error.issues[0]!)}`);
  return parsed.data;
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
