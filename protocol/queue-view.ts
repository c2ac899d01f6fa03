// A session's queue as clients see it (PROTOCOL.md §2.1): in `session.queue` events, queue.ack
// frames and `session.queue.get`. Below both the host's frames and the client's messages.

/** A queued prompt as clients see it (`session.queue`, queue.ack). */
export interface QueueItemView {
  queue_id: string;
  client_message_id: string | null;
  text: string;
  queued_at: string;
}

export interface QueueView {
  revision: number;
  items: QueueItemView[];
}
