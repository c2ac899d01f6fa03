// The sandboxes of one host's agent (AGENT.md §7): each session's guest, and each stdio MCP
// server, runs in a sandbox of its own, with its folder, its own home under
// `<home>/agent-homes/`, its proxy, and bounds on its tree. `sandbox.mode off` runs them as before,
// but each still dies with the host (a parent-death signal): no agent process outlives its host.
import { chmodSync, closeSync, constants, existsSync, mkdirSync, openSync, readlinkSync, realpathSync, rmSync } from 'node:fs';
import { cp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { SandboxStatus } from '../../protocol/outbound.js';
import { AgentFailure } from '../agent.js';
import { bwrapArgs, INSIDE_PROXY_PORT, within } from './bubblewrap.js';
import { sandboxMechanism } from './sandbox-try.js';
import { PROXY_SOCKET, proxyFolder } from './proxy-folders.js';
import { EgressProxy, type ProxyLog } from './egress-proxy.js';
import { hiddenPlaces, sealedPlaces, type SandboxConfig } from './sandbox-config.js';
import { MAX_PROCESSES, TreeWatchdog } from './tree-watchdog.js';
import { neededPaths, type Walls } from './visible-paths.js';
import { folderName } from './workspaces.js';

export interface SandboxLog extends ProxyLog {
  info(fields: object, message: string): void;
}


/** How to spawn a program in a sandbox: the program and arguments to give `spawn`, and its environment. */
export interface Confined {
  command: string;
  args: string[];
  env: Record<string, string>;
  /** Open files `spawn` passes on after stdin, stdout and stderr (fd 3 on): the folder bound by its fd. */
  fds: number[];
}

export interface AgentSandbox {
  /** Where its processes work (their cwd). */
  readonly folder: string;
  /**
   * `command args` as spawned inside, with `env` (§6's allowlist) and the proxy's variables, and
   * what the command needs of hidden places bound read-only. Throws AgentFailure `upstream` naming
   * the sandbox when something it names stays hidden.
   */
  wrap(command: string, args: readonly string[], env: Readonly<Record<string, string>>): Confined;
  /**
   * The spawned process and all it starts are bounded; `over` is told why when the tree passes a
   * bound, and should end it. Each tree (the guest, each terminal it had turnhost start) is
   * bounded on its own. Returns what stops the watch.
   */
  watch(pid: number, over: (why: string) => void): () => void;
  /** Its proxy goes, and the watch; its folder and home stay. */
  close(): Promise<void>;
}

const setprivPath = ['/usr/bin/setpriv', '/bin/setpriv'].find((path) => existsSync(path)) ?? null;

export class Sandboxes {
  private readonly watchdog = new TreeWatchdog();

  private constructor(
    readonly config: SandboxConfig,
    public status: SandboxStatus,
    private readonly log: SandboxLog,
    /** A folder each new agent home starts as a copy of (AGENT.md §8, `home_template`). */
    private readonly homeTemplate: string | null,
  ) {}

  /**
   * The start's try of the sandbox (AGENT.md §7): with `required`, bubblewrap must run `true`
   * inside walls like a session's within 5 s, or this throws with its first line of error. Not
   * `needed` (the agent starts no process now): tried at the first open. The proxies' folder of a
   * host that died goes.
   */
  static async start(given: SandboxConfig, log: SandboxLog, options: { needed?: boolean; homeTemplate?: string | null } = {}): Promise<Sandboxes> {
    mkdirSync(given.workspacesRoot, { recursive: true, mode: 0o700 });
    // The walls name real paths: a tmpfs over a link would hide the link, not what it leads to.
    const config = { ...given, home: realpathSync(given.home), workspacesRoot: realpathSync(given.workspacesRoot) };
    const template = options.homeTemplate ?? null;
    if (options.needed === false) return new Sandboxes(config, { mode: 'unused', mechanism: null }, log, template);
    if (config.mode === 'off') {
      log.warn({ name: 'sandbox-off' }, 'sandbox.mode is off: the agent\'s processes run unconfined, with the daemon\'s user and files (AGENT.md §7)');
      return new Sandboxes(config, { mode: 'off', mechanism: null }, log, template);
    }
    return new Sandboxes(config, { mode: 'required', mechanism: await sandboxMechanism() }, log, template);
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

  /** The sandbox's own home, made 0700 when it is new: empty, or a copy of `home_template`. */
  private async madeHome(name: string): Promise<string> {
    const home = this.agentHome(name);
    if (this.homeTemplate !== null && !existsSync(home)) {
      mkdirSync(join(home, '..'), { recursive: true, mode: 0o700 });
      await cp(this.homeTemplate, home, { recursive: true, verbatimSymlinks: true, errorOnExist: false, force: false });
      chmodSync(home, 0o700);
    }
    mkdirSync(home, { recursive: true, mode: 0o700 });
    return home;
  }

  /** A sandbox's own home (HOME inside), whether it was made yet or not. */
  homeOf(name: string): string {
    return this.agentHome(name);
  }

  private agentHome(name: string): string {
    return join(this.config.home, 'agent-homes', folderName(name));
  }

  /**
   * A sandbox named `name` (a session id, `mcp-<server>`) working in `folder`, with its own home
   * `<home>/agent-homes/<name>` (HOME inside: an agent's memory survives its processes there). An
   * MCP server given no folder works in that home (unconfined: in the turnhost home, as before).
   * `pinFolder`: the folder is bound from the fd it was checked on (a session's, which a member
   * chose: AGENT.md §7), so the spawn must pass on `Confined.fds`.
   */
  async open(name: string, folder: string | undefined, options: { pinFolder?: boolean } = {}): Promise<AgentSandbox> {
    // An agent that started with nothing to confine may come to need it (an MCP server added by a reload).
    if (this.status.mode === 'unused' && this.config.mode === 'required') this.status = { mode: 'required', mechanism: await sandboxMechanism() };
    if (this.status.mode !== 'required') return unconfined(folder ?? this.config.home);
    const agentHome = await this.madeHome(name);
    const folderFd = folder === undefined ? null : openFolder(folder);
    if (folderFd !== null && options.pinFolder !== true) closeSync(folderFd);
    const pinned = options.pinFolder === true ? folderFd : null;
    folder ??= agentHome;
    const proxyDir = proxyFolder(this.config.home);
    let proxy: EgressProxy;
    try {
      proxy = await EgressProxy.listen(join(proxyDir, PROXY_SOCKET), this.config.allowHosts, name, this.log);
    } catch (err) {
      rmSync(proxyDir, { recursive: true, force: true });
      if (pinned !== null) closeSync(pinned);
      throw new Error(`the sandbox's proxy could not listen in ${proxyDir}: ${(err as Error).message}`);
    }
    // A hidden place that does not exist is not made: `/` is read-only, and nothing lies there to hide.
    const config = { ...this.config, hidden: this.config.hidden.filter((path) => existsSync(path)) };
    const walls: Walls = {
      hidden: hiddenPlaces(config),
      sealed: sealedPlaces(config),
      visible: [...config.readOnly, folder, agentHome],
      homes: ['/home'],
    };
    const limits = { memoryBytes: config.memoryBytes, maxProcesses: MAX_PROCESSES };
    const watches = new Set<() => void>();
    return {
      folder,
      wrap: (command, args, env) => {
        const reach = neededPaths(command, args, env.PATH, walls);
        if (reach.unreachable.length > 0) throw new AgentFailure('upstream', hiddenMessage(reach.unreachable[0]!, config));
        const places = { folder: folder!, folderByFd: pinned !== null, exposed: reach.expose, agentHome, proxyDir };
        return { command: 'bwrap', args: bwrapArgs(config, places, command, args), env: { ...env, ...insideEnvironment(agentHome) }, fds: pinned === null ? [] : [pinned] }; // the first fd after stdio: FOLDER_FD
      },
      watch: (pid, over) => {
        const unwatch = this.watchdog.watch(pid, limits, over);
        watches.add(unwatch);
        return () => {
          unwatch();
          watches.delete(unwatch);
        };
      },
      close: async () => {
        for (const unwatch of watches) unwatch();
        watches.clear();
        if (pinned !== null) closeSync(pinned);
        await proxy.close();
        rmSync(proxyDir, { recursive: true, force: true });
      },
    };
  }
}

/** Why a path the agent's command names is out of its reach, and what to do (AGENT.md §7). */
function hiddenMessage(path: string, config: SandboxConfig): string {
  const why = within(path, config.home)
    ? 'it lies in the turnhost home, which no agent sees'
    : within(path, config.workspacesRoot)
      ? 'it lies in the workspaces, where each session sees only its own folder'
      : config.hidden.some((place) => within(path, place))
        ? 'it lies in a place of sandbox.hidden'
        : 'add its folder to sandbox.read_only';
  return `${path} is hidden by the sandbox (AGENT.md §7): ${why}`;
}

/**
 * The sandbox's folder, opened without following links and checked on the open fd: a session's
 * folder is kept as its real path (actors/daemon/session-folder.ts), so one now reached through a
 * symbolic link had a link put in its way (by another session's agent, in a folder that holds it),
 * and binding it would bind wherever the link leads.
 */
function openFolder(folder: string): number {
  let fd: number;
  try {
    // libuv opens every file close-on-exec: the fd reaches only the process a spawn hands it to.
    fd = openSync(folder, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'ENOTDIR') throw linkedFolder(folder, realOrNull(folder));
    throw new Error(`the session's folder ${folder} cannot be used: ${code ?? (err as Error).message}: its sandbox is not made`);
  }
  const real = readlinkSync(`/proc/self/fd/${fd}`);
  if (real !== folder) {
    closeSync(fd);
    throw linkedFolder(folder, real);
  }
  return fd;
}

function linkedFolder(folder: string, real: string | null): Error {
  return new Error(`the session's folder ${folder} is now reached through a symbolic link (to ${real ?? 'nowhere'}): its sandbox is not made`);
}

function realOrNull(path: string): string | null {
  try {
    return realpathSync(path);
  } catch {
    return null;
  }
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
      setprivPath === null
        ? { command, args: [...args], env: { ...env }, fds: [] }
        : { command: setprivPath, args: ['--pdeathsig', 'KILL', '--', command, ...args], env: { ...env }, fds: [] },
    watch: () => () => {},
    close: async () => {},
  };
}
