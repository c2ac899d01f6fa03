// The sessions in the page's side bar (PROTOCOL.md §5.5): pinned first, then the most recently
// active, each with its agent, state and queue; archived ones when asked.
import type { ForkOrigin } from './session-header.js';

export interface SessionItem {
  session_id: string;
  status: string;
  running: boolean;
  queued: number;
  /** Its first prompt's first line; null before it has one. */
  title: string | null;
  updated_at: string;
  /** What the person logged in is to it (PROTOCOL.md §5.6): an owner or an admin may share it. */
  role: 'owner' | 'editor' | 'viewer' | 'admin';
  forked_from?: ForkOrigin;
  /** Its agent (AGENT.md §8) and the model chosen for it (null: its agent's own). */
  agent: string;
  model: string | null;
  /** A session's life (PROTOCOL.md §2.3): archived ones are listed only when asked; pinned ones outlive retention. */
  archived: boolean;
  pinned: boolean;
}

export interface SessionListProps {
  sessions: SessionItem[];
  selected: string | null;
  showArchived: boolean;
  onShowArchived(shown: boolean): void;
  /** An agent's label, by its name. */
  agentLabel(agent: string): string;
  onChoose(sid: string): void;
}

export function SessionList({ sessions, selected, showArchived, onShowArchived, agentLabel, onChoose }: SessionListProps) {
  return (
    <>
      <label class="archived-toggle">
        <input type="checkbox" checked={showArchived} onChange={(e) => onShowArchived((e.target as HTMLInputElement).checked)} />
        Archived too
      </label>
      <ul aria-label="Sessions">
        {sessions.map((s) => (
          <li key={s.session_id} aria-current={s.session_id === selected ? 'true' : undefined}>
            <button type="button" onClick={() => onChoose(s.session_id)}>
              <span class="title">
                {s.pinned && <span aria-label="pinned">📌 </span>}
                {s.title ?? s.session_id}
                {s.archived && <em> (archived)</em>}
              </span>
              <small>
                {s.session_id} · {agentLabel(s.agent)}
                {s.model !== null ? ` (${s.model})` : ''} · {s.status} · {s.running ? 'running' : 'idle'} · {s.queued} queued
              </small>
            </button>
          </li>
        ))}
      </ul>
    </>
  );
}
