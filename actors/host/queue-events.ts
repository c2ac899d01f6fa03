// How a session's queue changes reach its clients (PROTOCOL.md §2.1): one `session.queue` event
// per change, carrying the whole queue. n queued prompts therefore cost n² item views over their
// life, so each event is built from every item's JSON, made once.
import type { QueuedPrompt } from '../../persistence/store-writer.js';
import type { QueueItemView } from '../../protocol/outbound.js';
import type { FrameWriter } from '../../protocol/frame-writer.js';
import type { SessionState } from './session-state.js';

export function itemView(item: QueuedPrompt): QueueItemView {
  return { queue_id: item.queueId, client_message_id: item.clientMessageId, text: item.text, queued_at: new Date(item.queuedAt).toISOString() };
}

/** Each item's JSON, made once: an item never changes (an edit replaces it). */
const itemJson = new WeakMap<QueuedPrompt, string>();

function jsonOf(item: QueuedPrompt): string {
  let json = itemJson.get(item);
  if (json === undefined) {
    json = JSON.stringify(itemView(item));
    itemJson.set(item, json);
  }
  return json;
}

/** Says that the session's queue changed: the whole queue, at its new revision. */
export function announceQueue(s: SessionState, writer: FrameWriter): void {
  const sid = JSON.stringify(s.sid);
  const params = `{"type":"session.queue","session_id":${sid},"payload":{"revision":${s.queueRevision},"items":[${s.queue.map(jsonOf).join(',')}]}}`;
  // The shape and key order of rpcEvent: the daemon reads events in that shape (event-line.ts).
  writer.writeJson(`{"type":"rpc","sid":${sid},"message":{"jsonrpc":"2.0","method":"event","params":${params}}}`);
}
