// The registry file (state/compute-host.json): how a daemon finds the host a previous daemon
// left behind. It is never proof that the host is alive, so reconcile checks the process itself
// (alive, command line, start time) before it ever signals it.
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { isRecord } from '../protocol/fields.js';

export interface Registry {
  host_pid: number;
  boot_id: string;
  build_sha: string;
  argv: string[];
  started_at: string;
  /** Field 22 of /proc/<pid>/stat: the process's start time in clock ticks since boot. */
  host_start_time: number;
  supervisor_pid: number;
}

export type ReconcileResult = 'none' | 'invalid-registry' | 'not-running' | 'pid-reuse-ignored' | 'terminated';

/** Writes the registry atomically: a temp file (0600) renamed over the old one. */
export function writeRegistry(path: string, registry: Registry): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const temp = `${path}.tmp-${process.pid}`;
  writeFileSync(temp, `${JSON.stringify(registry, null, 2)}\n`, { mode: 0o600 });
  renameSync(temp, path);
}

export function removeRegistry(path: string): void {
  rmSync(path, { force: true });
}

/** Process facts reconcile needs; the real ones read /proc, a test may give its own. */
export interface ProcessProbe {
  alive(pid: number): boolean;
  commandLine(pid: number): string[] | null;
  startTime(pid: number): number | null;
  /** Terminates a verified host: SIGTERM (and SIGCONT), a bounded wait, then SIGKILL. */
  terminate(pid: number): Promise<void>;
  /**
   * Kills what is left of a dead host's process group (an agent's processes that outlived it, run
   * without the sandbox): members started since the host did. How many there were.
   */
  endOrphans(pgid: number, startedSince: number): number;
}

export interface ReconcileOutcome {
  result: ReconcileResult;
  pid?: number;
  detail?: string;
}

/** Settles whatever the registry names, then removes it; every outcome but `none` removes the file. */
export async function reconcile(path: string, probe: ProcessProbe): Promise<ReconcileOutcome> {
  if (!existsSync(path)) return { result: 'none' };
  const outcome = await judge(path, probe);
  removeRegistry(path);
  return outcome;
}

async function judge(path: string, probe: ProcessProbe): Promise<ReconcileOutcome> {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    return { result: 'invalid-registry', detail: (err as Error).message };
  }
  const pid = isRecord(value) ? value['host_pid'] : undefined;
  if (typeof pid !== 'number' || !Number.isSafeInteger(pid) || pid <= 0) return { result: 'not-running', detail: `host_pid ${String(pid)}` };
  if (!probe.alive(pid)) {
    // Its group id is its pid, which no live process holds: only what it started can be in that group.
    const record = value as Partial<Registry>;
    const ended = typeof record.host_start_time === 'number' ? probe.endOrphans(pid, record.host_start_time) : 0;
    return { result: 'not-running', pid, ...(ended > 0 ? { detail: `ended ${ended} process(es) it left behind` } : {}) };
  }
  const record = value as Partial<Registry>;
  const why = notOurHost(pid, record, probe);
  if (why !== null) return { result: 'pid-reuse-ignored', pid, detail: why };
  await probe.terminate(pid);
  return { result: 'terminated', pid };
}

/** Null when the live process is the host the registry recorded; otherwise why it is not. */
function notOurHost(pid: number, record: Partial<Registry>, probe: ProcessProbe): string | null {
  const cmdline = probe.commandLine(pid);
  const entry = Array.isArray(record.argv) ? record.argv[1] : undefined;
  if (cmdline === null || typeof entry !== 'string' || !cmdline.includes(entry) || !cmdline.includes('host')) {
    return 'its command line does not name the turnhost host entry';
  }
  const started = probe.startTime(pid);
  if (typeof record.host_start_time !== 'number' || started !== record.host_start_time) return 'its start time differs from the recorded one';
  return null;
}
