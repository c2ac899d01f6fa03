// Guest agents (AGENT.md §6) for the tests: an agent config naming a guest, and the guest
// processes counted from /proc. Every guest's command line names its scene's temp folder, so the
// harness's cleanup ends any a test left, and a count sees only this scene's guests (the guests
// themselves, not the sandboxes around them). A guest keeps its sessions in its session's folder
// (the TS fixture) or its home (the Python example): what its sandbox lets it keep (AGENT.md §7).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isZombie, waitGone } from '../../persistence/proc.js';
import { fileWhere } from './files.js';
import { Harness, processesNaming, REPO_ROOT } from './processes.js';

export const TS_GUEST = join(REPO_ROOT, 'test', 'fixtures', 'acp-guest.mjs');
export const PYTHON_GUEST = join(REPO_ROOT, 'examples', 'acp-guest.py');

export interface GuestScene {
  dir: string;
  home: string;
  /** The scene's marker: on every guest's command line. */
  state: string;
  config: string;
  /** Writes the agent config: `acp` merged over the scene's guest, and any top-level keys. */
  write(acp?: Record<string, unknown>, top?: Record<string, unknown>): void;
  /** The scene's live guest processes (not the zombies of ended ones). */
  guests(): number[];
  /** True once every one of `pids` is gone, false after `ms`. */
  gone(pids: readonly number[], ms: number): Promise<boolean>;
}

export function guestScene(h: Harness, guest: 'ts' | 'python' = 'ts', flags: string[] = []): GuestScene {
  const dir = h.tempDir('turnhost-guest-');
  const state = join(dir, 'guest-state');
  const config = join(dir, 'agent.json');
  const base =
    guest === 'ts'
      ? { command: process.execPath, args: [TS_GUEST, '--scene', state, ...flags] }
      : { command: 'python3', args: [PYTHON_GUEST, state] };
  const scene: GuestScene = {
    dir,
    home: join(dir, 'home'),
    state,
    config,
    write(acp = {}, top = {}) {
      writeFileSync(config, JSON.stringify({ ...top, acp: { ...base, ...acp } }));
    },
    // A guest that has exited and waits to be reaped (its host is slow to, on a loaded machine) is gone, as `gone` says.
    guests: () => processesNaming([state]).filter((pid) => !isSandboxWrapper(pid) && !isZombie(pid)),
    async gone(pids, ms) {
      const results = await Promise.all(pids.map((pid) => waitGone(pid, ms)));
      return results.every(Boolean);
    },
  };
  scene.write();
  return scene;
}

/**
 * Resolves once the home's log file has a line matching `pattern`. The host's records reach the
 * file through the daemon, on a pipe of their own: no frame says when, so the file is awaited.
 */
export async function logged(home: string, pattern: RegExp, ms = 5_000): Promise<string> {
  const lines = await loggedWhere(home, (all) => all.some((l) => pattern.test(l)), `a line matching ${pattern}`, ms);
  return lines.find((l) => pattern.test(l))!;
}

/** As logged, until the log's lines as a whole meet `met`; resolves with them. */
export async function loggedWhere(home: string, met: (lines: string[]) => boolean, what: string, ms = 5_000): Promise<string[]> {
  return (await fileWhere(join(home, 'logs', 'turnhost.log'), (text) => met(text.split('\n')), what, ms)).split('\n');
}

/** bubblewrap, or the shell that starts a sandbox's bridge, around a guest: not the guest. */
function isSandboxWrapper(pid: number): boolean {
  try {
    const argv0 = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] ?? '';
    return /(^|\/)(bwrap|sh|setpriv)$/.test(argv0);
  } catch {
    return false;
  }
}

/** The daemon's arguments for a scene's guest. */
export function guestArgs(scene: GuestScene): string[] {
  return ['--agent', 'acp', '--agent-config', scene.config];
}
