// One message of a session's history as clients get it (PROTOCOL.md §2, `session.history`; §3,
// `turnhost history --json`): the readers make it, the client library and the page read it.
import type { ToolCall } from './chat.js';
import type { MessagePart } from './content.js';
import type { TurnUsage } from './usage.js';

/** One row of `turnhost history ID --json`; the tool fields only on messages that have them. */
export interface HistoryEntry {
  seq: number;
  role: string;
  content: string;
  turn_id: string | null;
  /** When it was stored (in `session.history`, not in `history --json`). */
  at?: string;
  /** On a prompt: who submitted it (PROTOCOL.md §5.6). */
  by?: string;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  /** A message's blocks when it carries more than text (PROTOCOL.md §2.4); `content` is their text form. */
  parts?: MessagePart[];
  /** On a turn's last assistant message: the model that answered, the turn's usage, and how long it ran (in `session.history`, not in `history --json`). */
  model?: string;
  usage?: TurnUsage;
  duration_ms?: number;
  /** With `all` (PROTOCOL.md §2.2): a message of a turn a rewind superseded, when and by whom. */
  superseded?: true;
  superseded_at?: string;
  superseded_by?: string | null;
}
