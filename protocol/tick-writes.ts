// Lines written to a stream in one event-loop turn leave together: the stream is corked at the
// first write of the turn and uncorked on the next, so the lines go out in one writev. One line
// per syscall cost the supervisor a fifth of its CPU at 64 busy sessions, and woke the reader
// once per line. `end()` uncorks, so nothing written before a close is held back.
//
// A writer that knows more lines are coming at once (`moreComing`: the supervisor with messages
// still in its mailbox, which nact hands it one per loop turn) may hold the batch a few loop turns
// longer. Behind the daemon the host got its turn starts ~5 to a read instead of ~9, committed
// groups half the size and spent ~40% more CPU per turn; holding for the mailbox gave it 15 to a
// read and the daemon's path 21% more turns/s (daemon bench, same hour). Bounded in loop turns and
// in bytes, so a writer that always has more coming still writes.
import type { Writable } from 'node:stream';

/** The most loop turns a batch waits for more lines. */
export const MAX_HELD_TURNS = 32;
/** A batch this large leaves at once. */
export const MAX_HELD_BYTES = 1024 * 1024;

export function tickWrites(stream: Writable, moreComing: () => boolean = () => false): (chunk: string | Buffer) => void {
  let corked = false;
  let turnsHeld = 0;
  const uncork = (): void => {
    if (moreComing() && ++turnsHeld < MAX_HELD_TURNS && stream.writableLength < MAX_HELD_BYTES) {
      setImmediate(uncork);
      return;
    }
    turnsHeld = 0;
    corked = false;
    stream.uncork();
  };
  return (chunk) => {
    if (!corked) {
      corked = true;
      stream.cork();
      setImmediate(uncork);
    }
    stream.write(chunk);
  };
}
