// The sandbox's walls (AGENT.md §7), made with bubblewrap called directly: its own user, PID, IPC,
// UTS and network namespaces, no capabilities, no new user namespaces, a new terminal session, and
// death with its parent (the host): when the host dies, even with the daemon, the kernel ends every
// process of the sandbox. `/` is read-only; /tmp, /run, /home, /root, the turnhost home, the
// workspaces root and `sandbox.hidden` are empty, wherever they lie; what the agent's command needs
// (agents/sandbox/visible-paths.ts) and `sandbox.read_only` are bound back read-only, and the
// sandbox's folder and its own home read-write, each at its own path.
// Inside, a small bridge (socat) listens on 127.0.0.1 and carries each connection to the
// session's proxy through a unix socket bound in: the network namespace has nothing else.
import { hiddenPlaces, sealedPlaces, type SandboxConfig } from './sandbox-config.js';
import { PROXY_SOCKET } from './proxy-folders.js';
import { NAMESPACES, WALLS } from './sandbox-try.js';

/** Where the proxy's folder appears inside (under /run, which is the sandbox's own). */
export const INSIDE_PROXY_DIR = '/run/turnhost-proxy';
/** The proxy's port on the sandbox's own loopback. */
export const INSIDE_PROXY_PORT = 3128;

/** The fd the sandbox's folder is passed on, in bubblewrap's process, when it is bound by its open fd. */
export const FOLDER_FD = 3;

export interface SandboxPlaces {
  /** The sandbox's folder (a session's cwd): read-write at the same path. */
  folder: string;
  /**
   * Bound from the folder opened and checked before the spawn (passed as FOLDER_FD), not from its
   * path: what was judged is what is bound, even if a link is swapped in between (bubblewrap
   * checks the mount is the fd's and closes the fd before the agent runs).
   */
  folderByFd: boolean;
  /** What the command needs from hidden places (visible-paths.ts): read-only at the same paths. */
  exposed: readonly string[];
  /** Its own home, HOME inside: read-write at the same path. */
  agentHome: string;
  /** The folder of its proxy's socket, on the host. */
  proxyDir: string;
}

/**
 * Starts the bridge in the background, bounds open files (the shell's `ulimit` is inherited),
 * then becomes the command (without the variables the shell itself set): `$0` and `$@` are the
 * command and its arguments, never parsed.
 */
function bridgeScript(maxOpenFiles: number): string {
  const bridge = `socat TCP-LISTEN:${INSIDE_PROXY_PORT},bind=127.0.0.1,reuseaddr,fork UNIX-CONNECT:${INSIDE_PROXY_DIR}/${PROXY_SOCKET}`;
  return `ulimit -n ${Math.trunc(maxOpenFiles)} && { ${bridge} </dev/null >/dev/null 2>&1 & } && unset PWD OLDPWD && exec "$0" "$@"`;
}

/** The mounts, in order: later ones lie over earlier ones. */
function mounts(config: SandboxConfig, places: SandboxPlaces): string[] {
  const sealed = outermost(sealedPlaces(config));
  // What a bind brings back, but for the sealed places inside it: hidden again at once.
  const bound = (bind: string[], at: string): string[] => [...bind, ...sealed.filter((place) => place !== at && within(place, at)).flatMap((place) => ['--tmpfs', place])];
  const folderBind = places.folderByFd ? ['--bind-fd', String(FOLDER_FD), places.folder] : ['--bind', places.folder, places.folder];
  return [
    '--ro-bind', '/', '/',
    '--dev', '/dev',
    '--proc', '/proc',
    ...outermost(hiddenPlaces(config)).flatMap((path) => ['--tmpfs', path]),
    ...places.exposed.flatMap((path) => bound(['--ro-bind', path, path], path)),
    ...config.readOnly.flatMap((path) => bound(['--ro-bind-try', path, path], path)),
    // An admin may give a session a folder that holds the home or the workspaces: they stay hidden all the same.
    ...bound(folderBind, places.folder),
    '--bind', places.agentHome, places.agentHome,
    '--ro-bind', places.proxyDir, INSIDE_PROXY_DIR,
    '--chdir', places.folder,
  ];
}

/** Each path not lying inside another of them, once, in their order. */
export function outermost(paths: readonly string[]): string[] {
  const unique = [...new Set(paths)];
  return unique.filter((path) => !unique.some((other) => other !== path && within(path, other)));
}

/** The argv of `bwrap` that runs `command args` inside the sandbox. */
export function bwrapArgs(config: SandboxConfig, places: SandboxPlaces, command: string, args: readonly string[]): string[] {
  return [...NAMESPACES, ...WALLS, ...mounts(config, places), '--', '/bin/sh', '-c', bridgeScript(config.maxOpenFiles), command, ...args];
}

/** Whether `path` is `parent` or lies below it. */
export function within(path: string, parent: string): boolean {
  return path === parent || path.startsWith(parent.endsWith('/') ? parent : `${parent}/`);
}
