// The start's one try of the sandbox (AGENT.md §7), and the walls every sandbox is made with.
// A spawn costs the process that makes it: its first one some 10 ms of its main thread here, and
// each forks the whole process. Measured on 2 cores, a try made among a daemon's own start cost 20
// to 30 ms of start to hello; a daemon therefore makes it once its first host said hello (daemon.ts).
import { execFile } from 'node:child_process';
import { AgentLoadError } from '../loader-error.js';

/** Every sandbox's own namespaces: user, PID, IPC, UTS and network. */
export const NAMESPACES = ['--unshare-user', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-net'];
/** No capabilities, no new user namespaces, death with its parent, a new terminal session. */
export const WALLS = ['--cap-drop', 'ALL', '--disable-userns', '--die-with-parent', '--new-session'];
/** How long the try may take. */
const TRY_TIMEOUT_MS = 5000;

/**
 * `true` inside walls like a session's, with the bridge's program, within 5 s: bubblewrap's name
 * and version when it works; else SandboxUnavailable with bubblewrap's (or the shell's) first line
 * of error. One process: the version is asked from inside the walls.
 */
export async function sandboxMechanism(): Promise<string> {
  const script = 'command -v socat >/dev/null || { echo "socat: not found" >&2; exit 127; }; bwrap --version 2>/dev/null || true';
  const walls = [...NAMESPACES, ...WALLS, '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp', '--', '/bin/sh', '-c', script];
  const tried = await new Promise<{ ok: boolean; out: string }>((resolve) =>
    execFile('bwrap', walls, { timeout: TRY_TIMEOUT_MS, encoding: 'utf8' }, (err, stdout, stderr) => {
      const firstLine = `${stderr}\n${stdout}\n${err?.message ?? ''}`.split('\n').find((line) => line.trim() !== '') ?? '';
      resolve({ ok: err === null, out: err === null ? stdout.trim() : firstLine.trim() });
    }),
  );
  if (!tried.ok) throw new SandboxUnavailable(tried.out);
  return tried.out === '' ? 'bubblewrap' : tried.out;
}

/** bubblewrap (or its bridge) cannot run here: the start fails, saying what to do. */
export class SandboxUnavailable extends Error {
  constructor(readonly firstLine: string) {
    super(`sandbox: bubblewrap cannot run the agent's processes here: ${firstLine}; install bubblewrap and socat (Debian: apt install bubblewrap socat), or set sandbox.mode "off" in the agent config (AGENT.md §7)`);
  }
}

/** The try for the agents of the config `file`: a machine that cannot make their sandbox is a config error naming the file (exit 78). */
export async function triedSandbox(file: string): Promise<string> {
  try {
    return await sandboxMechanism();
  } catch (err) {
    throw asConfigError(err, file);
  }
}

/** What to throw for `err` met while making the sandbox of the config `file`'s agents: SandboxUnavailable as a config error naming the file. */
export function asConfigError(err: unknown, file: string): unknown {
  return err instanceof SandboxUnavailable ? new AgentLoadError(`${file}: ${err.message}`) : err;
}
