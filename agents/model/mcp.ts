// The one file that speaks MCP, through the official SDK: stdio servers started once per host and
// shared by its sessions (AGENT.md §2), each in a sandbox of its own (§7). A server that fails to
// start or dies is logged and its tools are gone; each failure has an id, so the agent tells every
// session about it once.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { McpServerConfig } from './config.js';
import { globList } from './glob.js';
import { mcpToolName } from './mcp-names.js';
import type { AgentSandbox, Sandboxes } from '../sandbox/sandbox.js';

export interface McpTool {
  /** `mcp_<server>_<tool>`, as offered to the model. */
  name: string;
  server: string;
  tool: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface McpFailure {
  id: number;
  server: string;
  text: string;
}

export interface CallOutcome {
  ok: boolean;
  text: string;
}

export type ServerCounts = Record<string, { tools: number } | { error: string }>;

export interface McpLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

/** Connecting and listing tools: a server slower than this is reported as failed to start. */
const START_TIMEOUT_MS = 30_000;
/** An MCP server sees only these of the host's environment, plus its own `env` (AGENT.md §1). */
const PASSED_NAMES = ['PATH', 'HOME', 'LANG', 'TZ', 'TMPDIR'];
/** The SDK adds these to every server's environment; they are removed again. */
const SDK_DEFAULT_NAMES = ['LOGNAME', 'SHELL', 'TERM', 'USER'];
const STDERR_TAIL = 5;

interface Link {
  server: string;
  state: 'starting' | 'ready' | 'failed' | 'closed';
  client: Client;
  /** Its sandbox, once made. */
  sandbox: AgentSandbox | null;
  tools: McpTool[];
  timeoutMs: number;
  started: Promise<void>;
  stderrTail: string[];
}

export class McpServers {
  private links = new Map<string, Link>();
  private failures = new Map<string, McpFailure>();
  private lastFailureId = 0;

  constructor(
    private readonly log: McpLog,
    private readonly sandboxes: Sandboxes,
  ) {}

  /** Starts every enabled server in the background. */
  start(servers: Readonly<Record<string, McpServerConfig>>): void {
    for (const [server, config] of Object.entries(servers)) {
      if (config.enabled) this.links.set(server, this.connect(server, config));
    }
  }

  /** Waits, at most `maxMs`, for the servers still starting, so that a first turn sees their tools. */
  async whenStarted(maxMs: number): Promise<void> {
    const starting = [...this.links.values()].filter((link) => link.state === 'starting').map((link) => link.started);
    if (starting.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(starting), new Promise<void>((resolve) => (timer = setTimeout(resolve, maxMs)))]);
    clearTimeout(timer);
  }

  tools(): McpTool[] {
    return [...this.links.values()].flatMap((link) => (link.state === 'ready' ? link.tools : []));
  }

  /** The servers that failed to start or died, each failure once with its own id. */
  currentFailures(): McpFailure[] {
    return [...this.failures.values()];
  }

  async call(tool: McpTool, args: Record<string, unknown>, signal: AbortSignal): Promise<CallOutcome> {
    const link = this.links.get(tool.server);
    if (link === undefined || link.state !== 'ready') return { ok: false, text: `error: the MCP server "${tool.server}" is not running` };
    try {
      const result = await link.client.callTool({ name: tool.tool, arguments: args }, undefined, { signal, timeout: link.timeoutMs });
      return { ok: result.isError !== true, text: contentText(result.content) };
    } catch (err) {
      return { ok: false, text: `error: ${(err as Error).message}` };
    }
  }

  /** Stops every server, starts the configured ones again and counts their tools. */
  async reload(servers: Readonly<Record<string, McpServerConfig>>): Promise<ServerCounts> {
    await this.close();
    this.failures.clear();
    this.start(servers);
    await Promise.all([...this.links.values()].map((link) => link.started));
    const counts: ServerCounts = {};
    for (const link of this.links.values()) {
      counts[link.server] = link.state === 'ready' ? { tools: link.tools.length } : { error: this.failures.get(link.server)?.text ?? 'not running' };
    }
    return counts;
  }

  async close(): Promise<void> {
    const links = [...this.links.values()];
    this.links = new Map();
    for (const link of links) link.state = 'closed';
    await Promise.all(links.map(async (link) => {
      await link.client.close().catch(() => {});
      await link.sandbox?.close();
    }));
  }

  private connect(server: string, config: McpServerConfig): Link {
    const client = new Client({ name: 'turnhost', version: '1' });
    const link: Link = { server, state: 'starting', client, sandbox: null, tools: [], timeoutMs: config.timeout_s * 1000, started: Promise.resolve(), stderrTail: [] };
    // While starting, a close fails the connect instead, reported as a failed start.
    client.onclose = () => {
      if (link.state === 'ready') this.fail(link, `the MCP server "${server}" exited${this.lastWords(link)}`);
    };
    const include = config.tools.include === undefined ? () => true : globList(config.tools.include);
    const exclude = globList(config.tools.exclude);
    link.started = (async () => {
      try {
        const transport = await this.transport(link, config);
        await client.connect(transport, { timeout: START_TIMEOUT_MS });
        if (transport.pid !== null) link.sandbox?.watch(transport.pid, (why) => void this.overBound(link, why));
        const listed = await listAllTools(client);
        if (link.state !== 'starting') return;
        link.tools = this.distinctTools(server, listed.filter((t) => include(t.name) && !exclude(t.name)));
        link.state = 'ready';
        this.log.info({ server, tools: link.tools.length }, 'MCP server ready');
      } catch (err) {
        if (link.state !== 'starting') return;
        this.fail(link, `the MCP server "${server}" failed to start: ${(err as Error).message}${this.lastWords(link)}`);
        await client.close().catch(() => {});
      }
    })();
    return link;
  }

  /** The server's process, spawned in its sandbox with only its allowed environment; its stderr kept for its failures. */
  private async transport(link: Link, config: McpServerConfig): Promise<StdioClientTransport> {
    link.sandbox = await this.sandboxes.open(`mcp-${link.server}`, config.cwd);
    const confined = link.sandbox.wrap(config.command, config.args, serverEnvironment(config.env));
    const transport = new StdioClientTransport({ command: confined.command, args: confined.args, env: confined.env, cwd: link.sandbox.folder, stderr: 'pipe' });
    transport.stderr?.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line.trim() === '') continue;
        link.stderrTail.push(line.slice(0, 500));
        if (link.stderrTail.length > STDERR_TAIL) link.stderrTail.shift();
      }
    });
    return transport;
  }

  /** The server's sandbox passed a bound: it is ended, and its tools are gone until a reload. */
  private async overBound(link: Link, why: string): Promise<void> {
    if (link.state !== 'ready' && link.state !== 'starting') return;
    this.fail(link, `the MCP server "${link.server}" was ended with all it ran: ${why}`);
    await link.client.close().catch(() => {});
  }

  /** Two tools of one server whose names fold alike (`a.b`, `a_b`): the first is kept, the other left out and logged. */
  private distinctTools(server: string, listed: readonly ListedTool[]): McpTool[] {
    const byName = new Map<string, McpTool>();
    for (const listedTool of listed) {
      const tool = toTool(server, listedTool);
      const earlier = byName.get(tool.name);
      if (earlier === undefined) byName.set(tool.name, tool);
      else this.log.warn({ server, tool: tool.tool, kept: earlier.tool }, `the MCP server "${server}" has two tools named ${tool.name} once folded ("${earlier.tool}" and "${tool.tool}"); "${tool.tool}" is left out`);
    }
    return [...byName.values()];
  }

  private fail(link: Link, text: string): void {
    link.state = 'failed';
    link.tools = [];
    this.failures.set(link.server, { id: ++this.lastFailureId, server: link.server, text });
    this.log.warn({ server: link.server }, text);
  }

  private lastWords(link: Link): string {
    return link.stderrTail.length === 0 ? '' : ` (stderr: ${link.stderrTail.at(-1)})`;
  }
}

interface ListedTool {
  name: string;
  description?: string | undefined;
  inputSchema: Record<string, unknown>;
}

async function listAllTools(client: Client): Promise<ListedTool[]> {
  const tools: ListedTool[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor }, { timeout: START_TIMEOUT_MS });
    tools.push(...(page.tools as ListedTool[]));
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return tools;
}

function toTool(server: string, tool: ListedTool): McpTool {
  return {
    name: mcpToolName(server, tool.name),
    server,
    tool: tool.name,
    description: tool.description ?? '',
    parameters: tool.inputSchema,
  };
}

/** Undefined values are left out of a child's environment: the SDK's own defaults are cut that way. */
function serverEnvironment(own: Readonly<Record<string, string>>): Record<string, string> {
  const env: Record<string, string | undefined> = {};
  for (const name of SDK_DEFAULT_NAMES) env[name] = undefined;
  for (const name of PASSED_NAMES) if (process.env[name] !== undefined) env[name] = process.env[name];
  return { ...(env as Record<string, string>), ...own };
}

function contentText(content: unknown): string {
  if (!Array.isArray(content)) return '';
  return content
    .map((item: { type?: string; text?: string }) => (item?.type === 'text' && typeof item.text === 'string' ? item.text : JSON.stringify(item)))
    .join('\n');
}
