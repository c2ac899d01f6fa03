// How a session's queue changes reach its clients (PROTOCOL.md §2.1): one `session.queue` event
// per change, carrying the whole queue. n queued prompts therefore cost n² item views over their
// life, so the items' JSON is kept as bytes between changes: the two changes a busy session sees
// most (a prompt added at the tail, the head started) cost one item, and an event is a copy.
import type { QueuedPrompt } from '../../persistence/store-writer.js';
import type { QueueItemView } from '../../protocol/outbound.js';
import type { FrameWriter } from '../../protocol/frame-writer.js';
import type { SessionState } from './session-state.js';

export function itemView(item: QueuedPrompt): QueueItemView {
  return { queue_id: item.queueId, client_message_id: item.clientMessageId, text: item.text, queued_at: new Date(item.queuedAt).toISOString() };
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

const COMMA = 0x2c;
const MIN_CAPACITY = 4096;

/**
 * The comma-separated JSON of a queue's items, as bytes. Never writes below `end`: the frame
 * writer holds the slices it was given until the end of the event-loop turn, so a slice handed
 * out stays as it was; room is made by moving to a new buffer.
 */
class ItemsJson {
  private items: QueuedPrompt[] = [];
  private bytes = Buffer.alloc(0);
  private start = 0;
  private end = 0;

  /** The JSON of `queue`, brought up to date from what it was at the last call. */
  of(queue: readonly QueuedPrompt[]): Buffer {
    if (this.isAppendOf(queue)) this.append(jsonOf(queue[queue.length - 1]!));
    else if (this.isShiftOf(queue)) this.start = queue.length === 0 ? this.end : this.start + jsonOf(this.items[0]!).length + 1;
    else this.rebuild(queue);
    this.items = queue.slice();
    return this.bytes.subarray(this.start, this.end);
  }

  private isAppendOf(queue: readonly QueuedPrompt[]): boolean {
    return queue.length === this.items.length + 1 && this.items.every((item, i) => item === queue[i]);
  }

  private isShiftOf(queue: readonly QueuedPrompt[]): boolean {
    return queue.length === this.items.length - 1 && queue.every((item, i) => item === this.items[i + 1]);
  }

  private append(json: Buffer): void {
    const separator = this.end > this.start ? 1 : 0;
    if (this.end + separator + json.length > this.bytes.length) this.moveTo(Math.max(MIN_CAPACITY, 2 * (this.end - this.start + separator + json.length)));
    if (separator) this.bytes[this.end++] = COMMA;
    this.end += json.copy(this.bytes, this.end);
  }

  private rebuild(queue: readonly QueuedPrompt[]): void {
    this.bytes = Buffer.alloc(0);
    this.start = this.end = 0;
    for (const item of queue) this.append(jsonOf(item));
  }

  private moveTo(capacity: number): void {
    const moved = Buffer.allocUnsafe(capacity);
    this.end = this.bytes.copy(moved, 0, this.start, this.end);
    this.start = 0;
    this.bytes = moved;
  }
}

const itemsJson = new WeakMap<SessionState, ItemsJson>();

/** Says that the session's queue changed: the whole queue, at its new revision. */
export function announceQueue(s: SessionState, writer: FrameWriter): void {
  let items = itemsJson.get(s);
  if (items === undefined) itemsJson.set(s, (items = new ItemsJson()));
  const sid = JSON.stringify(s.sid);
  // The shape and key order of rpcEvent: the daemon reads events in that shape (event-line.ts).
  const head = `{"type":"rpc","sid":${sid},"message":{"jsonrpc":"2.0","method":"event","params":{"type":"session.queue","session_id":${sid},"payload":{"revision":${s.queueRevision},"items":[`;
  writer.writeAround(head, items.of(s.queue), ']}}}}');
  if (s.queue.length === 0) itemsJson.delete(s);
}
