// A session's queue (PROTOCOL.md §2.1): each waiting prompt, to edit or delete.
import { useState } from 'preact/hooks';

export interface QueueItem {
  queue_id: string;
  text: string;
}

export function QueueList({ items, onQueue }: { items: QueueItem[]; onQueue(queueId: string, action: 'edit' | 'delete', text?: string): Promise<void> }) {
  const [editing, setEditing] = useState<{ id: string; text: string } | null>(null);
  return (
    <section>
      <h3>Queue</h3>
      <ul aria-label="Queue">
        {items.map((item) => (
          <li key={item.queue_id}>
            {editing?.id === item.queue_id ? (
              <>
                <input aria-label="Queued text" value={editing.text} onInput={(e) => setEditing({ id: item.queue_id, text: (e.target as HTMLInputElement).value })} />
                <button type="button" onClick={() => void onQueue(item.queue_id, 'edit', editing.text).then(() => setEditing(null))}>Save</button>
              </>
            ) : (
              <>
                <span>{item.text}</span>
                <button type="button" onClick={() => setEditing({ id: item.queue_id, text: item.text })}>Edit</button>
              </>
            )}
            <button type="button" onClick={() => void onQueue(item.queue_id, 'delete')}>Delete</button>
          </li>
        ))}
      </ul>
    </section>
  );
}
