// The sandbox's configuration (AGENT.md §7): the key `sandbox` of the agent config, read by both
// agents. Validated once at start with the rest of the file (a bad key: exit 78 naming its path);
// resolved here into what the sandbox needs, with its defaults made concrete.
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { parseConfig, readAgentConfig, type ConfigSource } from '../agent-config.js';

/** `host` or `host:port`, as a CONNECT or an absolute URL names it. */
const hostRule = z.string().regex(/^[A-Za-z0-9.-]+(:[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$/, 'expected a host or host:port');

export const sandboxSchema = z.strictObject({
  mode: z.enum(['required', 'off']).default('required'),
  allow_hosts: z.array(hostRule).optional(),
  read_only: z.array(z.string().min(1)).default([]),
  memory_mb: z.number().int().positive().default(4096),
  max_open_files: z.number().int().min(16).max(1 << 20).default(4096),
  workspaces_root: z.string().min(1).optional(),
  hidden: z.array(z.string().min(1)).default([]),
});

export type SandboxFileConfig = z.infer<typeof sandboxSchema>;

/** A host the agent may reach through its proxy; a rule without a port allows any port of that host. */
export interface HostRule {
  host: string;
  port: number | null;
}

export interface SandboxConfig {
  mode: 'required' | 'off';
  allowHosts: HostRule[];
  /** Host paths hidden by default that the agent may read. */
  readOnly: string[];
  memoryBytes: number;
  maxOpenFiles: number;
  /** Where each person's workspace lies (`<root>/<person>/`), hidden whole in every sandbox. */
  workspacesRoot: string;
  /** More places hidden in every sandbox (`sandbox.hidden`). */
  hidden: string[];
  /** The turnhost home: hidden inside, but for a sandbox's own folder and home. */
  home: string;
}

/**
 * The file's `sandbox` made concrete. `allow_hosts` defaults to the hosts of the agent's model
 * URLs (the model agent's base URL; for a guest, the URLs its `acp.env` gives it, such as
 * ANTHROPIC_BASE_URL): what an agent needs to reach, and nothing else.
 */
export function resolveSandbox(file: SandboxFileConfig, options: { home: string; base: string; modelUrls: readonly string[] }): SandboxConfig {
  const rules = file.allow_hosts ?? options.modelUrls.flatMap((url) => hostOf(url));
  return {
    mode: file.mode,
    allowHosts: rules.map(parseHostRule),
    readOnly: file.read_only.map((path) => resolve(options.base, path)),
    memoryBytes: file.memory_mb * 1024 * 1024,
    maxOpenFiles: file.max_open_files,
    workspacesRoot: file.workspaces_root === undefined ? join(options.home, 'workspaces') : resolve(options.base, file.workspaces_root),
    hidden: file.hidden.map((path) => resolve(options.base, path)),
    home: options.home,
  };
}

/** Where every sandbox shows nothing (AGENT.md §7), wherever an admin put the home and the workspaces. */
export function hiddenPlaces(config: Pick<SandboxConfig, 'home' | 'workspacesRoot' | 'hidden'>): string[] {
  return ['/tmp', '/run', '/home', '/root', ...sealedPlaces(config)];
}

/** What is never bound back by what a command needs, and hidden again inside anything that is. */
export function sealedPlaces(config: Pick<SandboxConfig, 'home' | 'workspacesRoot' | 'hidden'>): string[] {
  return [config.home, config.workspacesRoot, ...config.hidden];
}

/** The URLs among a guest's `acp.env` values: its model API, as the guest is told to reach it. */
export function urlsAmong(values: Iterable<string>): string[] {
  return [...values].filter((value) => /^https?:\/\//i.test(value));
}

function hostOf(url: string): string[] {
  try {
    const parsed = new URL(url);
    return parsed.hostname === '' ? [] : [parsed.host];
  } catch {
    return [];
  }
}

export function parseHostRule(rule: string): HostRule {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(rule);
  if (bracketed) return { host: bracketed[1]!.toLowerCase(), port: bracketed[2] === undefined ? null : Number(bracketed[2]) };
  const at = rule.lastIndexOf(':');
  if (at === -1) return { host: rule.toLowerCase(), port: null };
  return { host: rule.slice(0, at).toLowerCase(), port: Number(rule.slice(at + 1)) };
}

/** Whether the rules let the agent reach `host:port`. */
export function allowed(rules: readonly HostRule[], host: string, port: number): boolean {
  const name = host.replace(/^\[|\]$/g, '').toLowerCase();
  return rules.some((rule) => rule.host === name && (rule.port === null || rule.port === port));
}

/** The `sandbox` key alone, whatever the agent (the daemon's: where a member's sessions may work). */
export function sandboxOnly(source: ConfigSource): SandboxConfig {
  const config = readAgentConfig(source);
  const file = parseConfig(z.object({ sandbox: sandboxSchema.prefault({}) }), config);
  return resolveSandbox(file.sandbox, { home: source.home, base: config.base, modelUrls: [] });
}
