// The ids that name a turn, a server request or a queued prompt are stored in tables that every
// node of a cluster shares, so they must be unique across nodes and boots by construction
// (PROTOCOL.md §6.2): each process draws 64 random bits once, and numbers what it names after
// them. Within a process the counter never repeats; two processes share a tag with a chance of
// 2^-64 a pair. A per-id random draw would cost a syscall a turn for nothing more.
import { randomBytes } from 'node:crypto';

const PROCESS_TAG = randomBytes(8).toString('hex');
let issued = 0;

/** `<prefix>-<this process's tag>-<a number it never issued before>`. */
export function uniqueId(prefix: string): string {
  return `${prefix}-${PROCESS_TAG}-${(++issued).toString(36)}`;
}
