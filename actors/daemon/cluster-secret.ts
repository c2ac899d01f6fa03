// The cluster secret as this node knows it (PROTOCOL.md §6.2): read from the store, and read
// again every few seconds, so that a `turnhost cluster rotate-secret` reaches every node within
// a heartbeat. When it changes, every link made with the old one ends: the links this node
// opened, and those it accepted; the next ones prove the new secret.
import { SECOND_MS } from '../runtime.js';

/** How often the store is asked again: the default heartbeat. */
export const SECRET_REFRESH_MS = 5 * SECOND_MS;

export class ClusterSecret {
  private value: string | null = null;
  private readonly listeners = new Set<() => void>();
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly read: () => Promise<string | null>) {
    this.timer = setInterval(() => void this.refresh(), SECRET_REFRESH_MS);
    this.timer.unref();
  }

  /**
   * The secret as the store has it now, for a link about to prove it: links are made rarely, and
   * both nodes of a new link must prove the same secret even in the seconds after a rotation, when
   * one of them would otherwise still hold the old one.
   */
  async fresh(): Promise<string | null> {
    // Null until the store has one (the host makes it at its first start).
    await this.refresh();
    return this.value;
  }

  /** `end` runs whenever the secret is replaced; the returned function stops that. */
  onRotated(end: () => void): () => void {
    this.listeners.add(end);
    return () => this.listeners.delete(end);
  }

  close(): void {
    clearInterval(this.timer);
    this.listeners.clear();
  }

  private async refresh(): Promise<void> {
    const next = await this.read().catch(() => this.value); // a store that cannot be read changes nothing
    if (next === null || next === this.value) return;
    const replaced = this.value !== null;
    this.value = next;
    if (replaced) for (const end of [...this.listeners]) end();
  }
}
