// The guest agent's configuration (AGENT.md §6): the key `acp` of the agent config, with the
// approval policy and MCP servers of §1/§2 and the sandbox of §7 from the same file. Validated once at start: a missing
// or broken `acp` is one line naming the key path, and the process exits 78.
import type { HomeSyncConfig } from './home-sync.js';
import { resolve } from 'node:path';
import { z } from 'zod';
import {
  approvalSchema,
  configProblem,
  envName,
  mcpServerSchema,
  parseConfig,
  placeCommand,
  placeServers,
  readAgentConfig,
  type ApprovalConfig,
  type ConfigSource,
  type McpServerConfig,
} from '../agent-config.js';
import { serverNameClash } from '../model/mcp-names.js';
import { resolveSandbox, sandboxSchema, urlsAmong, type SandboxConfig } from '../sandbox/sandbox-config.js';

const guestSchema = z.strictObject({
  command: z.string().min(1),
  args: z.array(z.string()).default([]),
  env: z.record(envName, z.string()).default({}),
  pass_env: z.array(envName).default([]),
  cwd: z.string().optional(),
  max_live_sessions: z.number().int().positive().default(8),
  idle_secs: z.number().positive().default(600),
  start_timeout_s: z.number().positive().default(60),
  cancel_timeout_s: z.number().positive().default(10),
  home_sync: z
    .strictObject({
      mode: z.enum(['auto', 'on', 'off']).default('auto'),
      max_mib: z.number().positive().default(256),
      exclude: z.array(z.string().min(1)).default(['.cache/**', '**/node_modules/**']),
    })
    .prefault({}),
});

// Not strict: the model agent's keys may share the file.
const fileSchema = z.object({
  acp: guestSchema,
  approval: approvalSchema.prefault({}),
  mcp_servers: z.record(z.string(), mcpServerSchema).default({}),
  sandbox: sandboxSchema.prefault({}),
  // The model agent's base URL (§1): reachable from the sandbox by default, as the guest's own model URLs are.
  base_url: z.string().optional(),
});

/** What the guest's environment is made of, besides the values its config sets. */
export const GUEST_PASSED_NAMES = ['PATH', 'HOME', 'LANG', 'TZ', 'TMPDIR'] as const;

/** Names of `acp.env` entries whose values are secrets, like `pass_env`'s. */
const SECRET_NAME = /KEY|TOKEN|SECRET/i;

export interface GuestConfig {
  file: string;
  command: string;
  args: string[];
  /** The guest's whole environment: the passed names, `acp.env`, then the `pass_env` variables. */
  env: Record<string, string>;
  /** Values that must never be written anywhere. */
  secrets: string[];
  /** The names the guest takes from the daemon's environment: a daemon passes them on to its host. */
  passEnv: string[];
  cwd: string | undefined;
  maxLiveSessions: number;
  idleMs: number;
  startTimeoutMs: number;
  cancelTimeoutMs: number;
  /** The guest's home in the store (AGENT.md §6, home-sync.ts). */
  homeSync: HomeSyncConfig;
  approval: ApprovalConfig;
  mcpServers: Record<string, McpServerConfig>;
  sandbox: SandboxConfig;
}

export function loadGuestConfig(source: ConfigSource): GuestConfig {
  const config = readAgentConfig(source);
  if (typeof config.raw === 'object' && config.raw !== null && !('acp' in config.raw)) {
    throw configProblem(config, 'acp', 'missing: a guest agent needs an "acp" object with the guest\'s "command" (AGENT.md §6)');
  }
  const file = parseConfig(fileSchema, config);
  const clash = serverNameClash(Object.keys(file.mcp_servers));
  if (clash !== null) throw configProblem(config, 'mcp_servers', clash);
  const guest = file.acp;
  const passed = Object.fromEntries(GUEST_PASSED_NAMES.flatMap((name) => (source.env[name] === undefined ? [] : [[name, source.env[name]!]])));
  const fromDaemon = Object.fromEntries(guest.pass_env.flatMap((name) => (source.env[name] === undefined ? [] : [[name, source.env[name]!]])));
  const secretEntries = Object.entries(guest.env).filter(([name]) => SECRET_NAME.test(name));
  return {
    file: config.path,
    command: placeCommand(guest.command, config.base),
    args: guest.args,
    env: { ...passed, ...guest.env, ...fromDaemon },
    passEnv: guest.pass_env,
    secrets: [...Object.values(fromDaemon), ...secretEntries.map(([, value]) => value)].filter((value) => value !== ''),
    cwd: guest.cwd === undefined ? undefined : resolve(config.base, guest.cwd),
    maxLiveSessions: guest.max_live_sessions,
    idleMs: guest.idle_secs * 1000,
    startTimeoutMs: guest.start_timeout_s * 1000,
    cancelTimeoutMs: guest.cancel_timeout_s * 1000,
    homeSync: { mode: guest.home_sync.mode, maxBytes: guest.home_sync.max_mib * 1024 * 1024, exclude: guest.home_sync.exclude },
    approval: file.approval,
    sandbox: resolveSandbox(file.sandbox, { home: source.home, base: config.base, modelUrls: [...(file.base_url === undefined ? [] : [file.base_url]), ...urlsAmong(Object.values(guest.env))] }),
    mcpServers: placeServers(Object.fromEntries(Object.entries(file.mcp_servers).filter(([, server]) => server.enabled)), config.base),
  };
}
