// How a session's queue changes leave the host (PROTOCOL.md §2.1): one `session.queue` event per
// change, carrying the whole queue, in an `rpc` frame. A parent that makes those events itself
// (the daemon, which starts its host with --queue-deltas) gets one small `queue.delta` frame per
// change instead: the queue's bytes then cross the pipe once, not once per change.
import type { QueuedPrompt } from '../../persistence/store-writer.js';
import type { QueueDeltaFrame } from '../../protocol/outbound.js';
import type { QueueItemView } from '../../protocol/queue-view.js';
import type { FrameWriter } from '../../protocol/frame-writer.js';
import { QueueItemsJson, queueParamsOpen } from '../../protocol/queue-items-json.js';

export function itemView(item: QueuedPrompt): QueueItemView {
  return { queue_id: item.queueId, client_message_id: item.clientMessageId, text: item.text, queued_at: new Date(item.queuedAt).toISOString() };
}

/** What a change did to the queue; `reset` stands for any change but the two common ones. */
type QueueChange = { op: 'append'; item: QueuedPrompt } | { op: 'shift' } | { op: 'reset' };

/** A session's queue as last announced by this process (null: never), to name the next change. */
class LastAnnounced {
  private items: QueuedPrompt[] | null = null;

  changeTo(queue: readonly QueuedPrompt[]): QueueChange {
    const before = this.items;
    this.items = queue.slice();
    if (before === null) return { op: 'reset' };
    if (queue.length === before.length + 1 && before.every((item, i) => item === queue[i])) return { op: 'append', item: queue[queue.length - 1]! };
    if (queue.length === before.length - 1 && queue.every((item, i) => item === before[i + 1])) return { op: 'shift' };
    return { op: 'reset' };
  }
}

/** What an announcement reads of a session: its id, queue and revision (a SessionState has them). */
export interface QueueOwner {
  readonly sid: string;
  readonly queue: readonly QueuedPrompt[];
  readonly queueRevision: number;
}

export interface QueueAnnouncer {
  /** Says that the session's queue changed: it is now `s.queue`, at `s.queueRevision`. */
  announce(s: QueueOwner): void;
}

/** Each item's JSON, made once: an item never changes (an edit replaces it). */
const itemJson = new WeakMap<QueuedPrompt, Buffer>();

function jsonOf(item: QueuedPrompt): Buffer {
  let json = itemJson.get(item);
  if (json === undefined) {
    json = Buffer.from(JSON.stringify(itemView(item)), 'utf8');
    itemJson.set(item, json);
  }
  return json;
}

/** The contract's events: the whole queue in every one. */
export function fullQueueEvents(writer: FrameWriter): QueueAnnouncer {
  const sessions = new WeakMap<QueueOwner, { last: LastAnnounced; items: QueueItemsJson }>();
  return {
    announce(s) {
      let kept = sessions.get(s);
      if (kept === undefined) sessions.set(s, (kept = { last: new LastAnnounced(), items: new QueueItemsJson() }));
      const change = kept.last.changeTo(s.queue);
      if (change.op === 'append') kept.items.append(jsonOf(change.item));
      else if (change.op === 'shift') kept.items.shift();
      else kept.items.reset(s.queue.map(jsonOf));
      // The shape and key order of rpcEvent: the daemon reads events in that shape (event-line.ts).
      const head = `{"type":"rpc","sid":${JSON.stringify(s.sid)},"message":{"jsonrpc":"2.0","method":"event","params":${queueParamsOpen(s.sid, s.queueRevision)}`;
      writer.writeAround(head, kept.items.json, ']}}}}');
      if (s.queue.length === 0) sessions.delete(s); // what a drained queue's bytes held goes
    },
  };
}

/** One `queue.delta` frame per change, for a parent that keeps each queue and makes the events. */
export function queueDeltas(writer: FrameWriter): QueueAnnouncer {
  const sessions = new WeakMap<QueueOwner, LastAnnounced>();
  return {
    announce(s) {
      let last = sessions.get(s);
      if (last === undefined) sessions.set(s, (last = new LastAnnounced()));
      const change = last.changeTo(s.queue);
      const base = { type: 'queue.delta', sid: s.sid, revision: s.queueRevision } as const;
      const frame: QueueDeltaFrame =
        change.op === 'append' ? { ...base, op: 'append', item: itemView(change.item) } : change.op === 'shift' ? { ...base, op: 'shift' } : { ...base, op: 'reset', items: s.queue.map(itemView) };
      writer.write(frame);
    },
  };
}
