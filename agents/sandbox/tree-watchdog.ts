// Bounds a sandbox's whole process tree (AGENT.md §7): its memory (`sandbox.memory_mb`, the sum
// of its processes' resident sets) and how many processes it has. cgroups are not ours to use on
// every machine, and RLIMIT_NPROC does not hold for root, so the host looks: twice a second, one
// pass over /proc for every tree it watches. A tree over a bound is ended by its owner.
import { childrenOf, processTable } from '../../persistence/proc.js';

const LOOK_EVERY_MS = 500;
/** Processes one sandbox may run: a fork bomb is ended here, long before the machine's own limits. */
export const MAX_PROCESSES = 512;
const PAGE_BYTES = 4096;

export interface TreeLimits {
  memoryBytes: number;
  maxProcesses: number;
}

interface Watched {
  root: number;
  limits: TreeLimits;
  over: (why: string) => void;
}

export class TreeWatchdog {
  private readonly watched = new Set<Watched>();
  private timer: NodeJS.Timeout | null = null;

  /** Watches the tree under `root` (itself included); `over` is called once, with why. Returns what stops watching. */
  watch(root: number, limits: TreeLimits, over: (why: string) => void): () => void {
    const entry: Watched = { root, limits, over };
    this.watched.add(entry);
    this.timer ??= setInterval(() => this.look(), LOOK_EVERY_MS).unref();
    return () => this.unwatch(entry);
  }

  private unwatch(entry: Watched): void {
    this.watched.delete(entry);
    if (this.watched.size === 0 && this.timer !== null) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }

  private look(): void {
    const table = processTable();
    const children = childrenOf(table);
    for (const entry of [...this.watched]) {
      const tree = table.has(entry.root) ? [entry.root] : [];
      for (let i = 0; i < tree.length; i++) tree.push(...(children.get(tree[i]!) ?? []));
      const bytes = tree.reduce((sum, pid) => sum + (table.get(pid)?.rssPages ?? 0) * PAGE_BYTES, 0);
      const why =
        tree.length > entry.limits.maxProcesses
          ? `its processes numbered more than ${entry.limits.maxProcesses}`
          : bytes > entry.limits.memoryBytes
            ? `its processes used ${Math.round(bytes / 1048576)} MB, more than sandbox.memory_mb (${Math.round(entry.limits.memoryBytes / 1048576)})`
            : null;
      if (why === null) continue;
      this.unwatch(entry);
      entry.over(why);
    }
  }
}
