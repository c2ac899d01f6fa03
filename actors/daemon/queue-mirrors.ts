// The daemon's copy of each session's queue, kept from its host's `queue.delta` frames (it starts
// the host with --queue-deltas), to make the `session.queue` events of PROTOCOL.md §2.1 itself:
// every event carries the whole queue, and made here the queue's bytes cross the host's pipe
// once instead of once per change. A host's first change of a session is a reset, so a copy left
// by a host that died is replaced before it is used; a new host's hello drops them all.
import type { QueueDeltaFrame } from '../../protocol/outbound.js';
import { QueueItemsJson } from '../../protocol/queue-items-json.js';

function itemBytes(item: unknown): Buffer {
  return Buffer.from(JSON.stringify(item), 'utf8');
}

export class QueueMirrors {
  private readonly queues = new Map<string, QueueItemsJson>();

  /**
   * Applies a change; answers the queue's items as they go in the `session.queue` event it
   * stands for (comma-separated JSON, valid until the next change of that session).
   */
  apply(delta: QueueDeltaFrame): Buffer {
    let items = this.queues.get(delta.sid);
    if (items === undefined) this.queues.set(delta.sid, (items = new QueueItemsJson()));
    if (delta.op === 'append') items.append(itemBytes(delta.item));
    else if (delta.op === 'shift') items.shift();
    else items.reset(delta.items.map(itemBytes));
    if (items.size === 0) this.queues.delete(delta.sid);
    return items.json;
  }

  clear(): void {
    this.queues.clear();
  }
}
