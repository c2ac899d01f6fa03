// The sandboxes of one host's agent (AGENT.md §7): each session's guest, and each stdio MCP
// server, runs in a sandbox of its own, with its folder, its own home under
// `<home>/agent-homes/`, its proxy, and bounds on its tree. `sandbox.mode off` runs them as before,
// but each still dies with the host (a parent-death signal): no agent process outlives its host.
import { randomBytes, createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { cp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SandboxStatus } from '../../protocol/outbound.js';
import { bwrapArgs, INSIDE_PROXY_PORT, probeSandbox, PROXY_SOCKET } from './bubblewrap.js';
import { EgressProxy, type ProxyLog } from './egress-proxy.js';
import type { SandboxConfig } from './sandbox-config.js';
import { MAX_PROCESSES, TreeWatchdog } from './tree-watchdog.js';

export interface SandboxLog extends ProxyLog {
  info(fields: object, message: string): void;
}


/** How to spawn a program in a sandbox: the program and arguments to give `spawn`, and its environment. */
export interface Confined {
  command: string;
  args: string[];
  env: Record<string, string>;
}

export interface AgentSandbox {
  /** Where its processes work (their cwd). */
  readonly folder: string;
  /** `command args` as spawned inside, with `env` (§6's allowlist) and the proxy's variables. */
  wrap(command: string, args: readonly string[], env: Readonly<Record<string, string>>): Confined;
  /** The spawned process and all it starts are bounded; `over` is told why when the tree passes a bound, and should end it. */
  watch(pid: number, over: (why: string) => void): void;
  /** Its proxy goes, and the watch; its folder and home stay. */
  close(): Promise<void>;
}

/** A unix socket's path, with its terminating NUL (sun_path). */
const UNIX_PATH_MAX = 108;

const setprivPath = ['/usr/bin/setpriv', '/bin/setpriv'].find((path) => existsSync(path)) ?? null;

/** A name (a session id) as one safe path segment; names with other characters get a digest, so two never share a folder. */
export function folderName(name: string): string {
  if (/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/.test(name)) return name;
  return `${name.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 60)}-${createHash('sha256').update(name).digest('hex').slice(0, 16)}`;
}

export class Sandboxes {
  private readonly watchdog = new TreeWatchdog();

  private constructor(
    readonly config: SandboxConfig,
    public status: SandboxStatus,
    private readonly log: SandboxLog,
  ) {}

  /**
   * The start's try of the sandbox (AGENT.md §7): with `required`, bubblewrap must run `true`
   * inside walls like a session's within 5 s, or this throws with its first line of error. Not
   * `needed` (the agent starts no process now): tried at the first open. The proxies' folder of a
   * host that died goes.
   */
  static async start(config: SandboxConfig, log: SandboxLog, needed = true): Promise<Sandboxes> {
    rmSync(join(config.home, 'run'), { recursive: true, force: true });
    if (!needed) return new Sandboxes(config, { mode: 'unused', mechanism: null }, log);
    if (config.mode === 'off') {
      log.warn({ name: 'sandbox-off' }, 'sandbox.mode is off: the agent\'s processes run unconfined, with the daemon\'s user and files (AGENT.md §7)');
      return new Sandboxes(config, { mode: 'off', mechanism: null }, log);
    }
    return new Sandboxes(config, { mode: 'required', mechanism: await sandboxMechanism() }, log);
  }

  /**
   * A fork's home starts as a copy of its source's (PROTOCOL.md §2.2: a guest's memory comes along
   * with a fork at the source's last turn). Only a home not made yet: never over one in use. Links
   * are copied as links, never followed (they name places inside the source's sandbox). True when
   * it copied.
   */
  async seedHome(name: string, from: string): Promise<boolean> {
    if (this.config.mode !== 'required') return false;
    const home = this.agentHome(name);
    const source = this.agentHome(from);
    if (existsSync(home) || !existsSync(source)) return false;
    await cp(source, home, { recursive: true, verbatimSymlinks: true, errorOnExist: false, force: false, preserveTimestamps: true });
    return true;
  }

  /** A home seedHome made that turned out not to match the fork: gone before any process of the fork sees it. */
  async dropHome(name: string): Promise<void> {
    await rm(this.agentHome(name), { recursive: true, force: true });
  }

  private agentHome(name: string): string {
    return join(this.config.home, 'agent-homes', folderName(name));
  }

  /**
   * A sandbox named `name` (a session id, `mcp-<server>`) working in `folder`, with its own home
   * `<home>/agent-homes/<name>` (HOME inside: an agent's memory survives its processes there). An
   * MCP server given no folder works in that home (unconfined: in the turnhost home, as before).
   */
  async open(name: string, folder: string | undefined): Promise<AgentSandbox> {
    // An agent that started with nothing to confine may come to need it (an MCP server added by a reload).
    if (this.status.mode === 'unused' && this.config.mode === 'required') this.status = { mode: 'required', mechanism: await sandboxMechanism() };
    if (this.status.mode !== 'required') return unconfined(folder ?? this.config.home);
    const agentHome = this.agentHome(name);
    mkdirSync(agentHome, { recursive: true, mode: 0o700 });
    if (folder !== undefined) checkFolder(folder);
    folder ??= agentHome;
    const proxyDir = proxyFolder(this.config.home);
    let proxy: EgressProxy;
    try {
      proxy = await EgressProxy.listen(join(proxyDir, PROXY_SOCKET), this.config.allowHosts, name, this.log);
    } catch (err) {
      rmSync(proxyDir, { recursive: true, force: true });
      throw new Error(`the sandbox's proxy could not listen in ${proxyDir}: ${(err as Error).message}`);
    }
    const places = { folder, agentHome, proxyDir };
    const limits = { memoryBytes: this.config.memoryBytes, maxProcesses: MAX_PROCESSES };
    let unwatch: (() => void) | null = null;
    return {
      folder,
      wrap: (command, args, env) => ({ command: 'bwrap', args: bwrapArgs(this.config, places, command, args), env: { ...env, ...insideEnvironment(agentHome) } }),
      watch: (pid, over) => {
        unwatch?.();
        unwatch = this.watchdog.watch(pid, limits, over);
      },
      close: async () => {
        unwatch?.();
        await proxy.close();
        rmSync(proxyDir, { recursive: true, force: true });
      },
    };
  }
}

/** bubblewrap's name and version when it runs here as a sandbox needs; SandboxUnavailable otherwise (AGENT.md §7). */
export async function sandboxMechanism(): Promise<string> {
  const probe = await probeSandbox();
  if ('error' in probe) throw new SandboxUnavailable(probe.error);
  return probe.version;
}

/**
 * A folder of its own (0700) for a sandbox's proxy socket: in the home, or, when the home's path is
 * so long that a socket's path in it would pass the kernel's bound (108 bytes), in the host's tmp.
 */
function proxyFolder(home: string): string {
  const inHome = join(home, 'run', randomBytes(6).toString('hex'));
  if (join(inHome, PROXY_SOCKET).length < UNIX_PATH_MAX) {
    mkdirSync(inHome, { recursive: true, mode: 0o700 });
    return inHome;
  }
  return mkdtempSync(join(tmpdir(), 'turnhost-proxy-'));
}

/** bubblewrap (or its bridge) cannot run here: the start fails, saying what to do. */
export class SandboxUnavailable extends Error {
  constructor(readonly firstLine: string) {
    super(`sandbox: bubblewrap cannot run the agent's processes here: ${firstLine}; install bubblewrap and socat (Debian: apt install bubblewrap socat), or set sandbox.mode "off" in the agent config (AGENT.md §7)`);
  }
}

/**
 * A session's folder is kept as its real path (actors/daemon/session-folder.ts): one now reached
 * through a symbolic link had a link put in its way (by another session's agent, in a folder that
 * holds it), and binding it would bind wherever the link leads.
 */
function checkFolder(folder: string): void {
  let real: string;
  try {
    real = realpathSync(folder);
  } catch (err) {
    throw new Error(`the session's folder ${folder} cannot be used: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  if (real !== folder) throw new Error(`the session's folder ${folder} is now reached through a symbolic link (to ${real}): its sandbox is not made`);
}

/** HOME, a private /tmp, and the proxy (both cases: curl reads only the lower-case http_proxy). */
function insideEnvironment(agentHome: string): Record<string, string> {
  const proxy = `http://127.0.0.1:${INSIDE_PROXY_PORT}`;
  return { HOME: agentHome, TMPDIR: '/tmp', HTTPS_PROXY: proxy, HTTP_PROXY: proxy, https_proxy: proxy, http_proxy: proxy, NO_PROXY: '', no_proxy: '' };
}

/**
 * `sandbox.mode off`: as before, but with a parent-death signal on the process (setpriv), so that
 * it dies with its host even when the daemon dies too; what it started is ended by the next daemon
 * (persistence/registry.ts).
 */
function unconfined(folder: string): AgentSandbox {
  return {
    folder,
    wrap: (command, args, env) =>
      setprivPath === null ? { command, args: [...args], env: { ...env } } : { command: setprivPath, args: ['--pdeathsig', 'KILL', '--', command, ...args], env: { ...env } },
    watch: () => {},
    close: async () => {},
  };
}
