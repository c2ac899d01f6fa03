// The model agent's configuration (AGENT.md §1): found, read and validated once at start. Any
// problem is one line naming the file and the key path, and the process exits 78.
import { z } from 'zod';
import {
  approvalSchema,
  envName,
  mcpServerSchema,
  configProblem,
  parseConfig,
  placeServers,
  readAgentConfig,
  type ApprovalConfig,
  type ConfigSource,
  type McpServerConfig,
} from '../agent-config.js';
import { serverNameClash } from './mcp-names.js';
import { resolveSandbox, sandboxSchema, type SandboxConfig } from '../sandbox/sandbox-config.js';

export type { ApprovalConfig, ConfigSource, McpServerConfig };

export const DEFAULT_SYSTEM_PROMPT =
  'You are a helpful assistant working inside turnhost. Use the tools you are given when they help, and ask the user with the clarify tool when a request is ambiguous.';
const DEFAULT_BASE_URL = 'https://api.openai.com/v1';

const fileSchema = z.strictObject({
  model: z.string().min(1).optional(),
  base_url: z.string().min(1).optional(),
  api_key_env: envName.default('OPENAI_API_KEY'),
  system_prompt: z.string().default(DEFAULT_SYSTEM_PROMPT),
  personalities: z.record(z.string(), z.string()).default({}),
  temperature: z.number().optional(),
  max_tokens: z.number().int().positive().optional(),
  // Content beyond text (PROTOCOL.md §2.4): a prompt's images go to the model as image_url data URLs.
  vision: z.boolean().default(false),
  context_tokens: z.number().int().positive().default(128_000),
  compress_at: z.number().min(0).max(1).default(0.75),
  keep_recent: z.number().int().min(0).default(6),
  max_tool_rounds: z.number().int().positive().default(25),
  request_timeout_s: z.number().positive().default(600),
  idle_timeout_s: z.number().positive().default(60),
  max_retries: z.number().int().min(0).default(2),
  approval: approvalSchema.prefault({}),
  mcp_servers: z.record(z.string(), mcpServerSchema).default({}),
  sandbox: sandboxSchema.prefault({}),
  // The guest agent's key (§6): the same file may configure both agents, each reads its own.
  acp: z.unknown().optional(),
});

type FileConfig = z.infer<typeof fileSchema>;

/** The validated file, with the model and base URL resolved from the environment where it gives none. */
export type ModelConfig = Omit<FileConfig, 'model' | 'base_url' | 'sandbox'> & { model: string; base_url: string; file: string | null; sandbox: SandboxConfig };

export function loadModelConfig(source: ConfigSource): ModelConfig {
  const config = readAgentConfig(source);
  const file = parseConfig(fileSchema, config);
  const model = file.model ?? nonEmpty(source.env['TURNHOST_MODEL']);
  if (model === undefined) throw configProblem(config, 'model', 'no model given: set "model" in the agent config or $TURNHOST_MODEL');
  const baseUrl = file.base_url ?? nonEmpty(source.env['OPENAI_BASE_URL']) ?? DEFAULT_BASE_URL;
  const clash = serverNameClash(Object.keys(file.mcp_servers));
  if (clash !== null) throw configProblem(config, 'mcp_servers', clash);
  const servers = placeServers(file.mcp_servers, config.base);
  const sandbox = resolveSandbox(file.sandbox, { home: source.home, base: config.base, modelUrls: [baseUrl] });
  return { ...file, mcp_servers: servers, model, base_url: baseUrl.replace(/\/+$/, ''), file: config.found ? config.path : null, sandbox };
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}
