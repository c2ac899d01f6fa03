// The shapes of content beyond text (PROTOCOL.md §2.4), as stored and sent back: a prompt's
// blocks (ACP's, bytes named by blob) and a tool result's diffs and terminals. Types alone, with no
// import: the page reads them too. content.ts checks what comes in against them.

/** `sha256:` and 64 hex digits: how a stored blob is named. */
export type BlobRef = string;

/** A block as turnhost stores it, hands it to agents and sends it back: bytes only by reference. */
export type ContentBlock =
  | { type: 'text'; text: string }
  | { type: 'image' | 'audio'; mimeType: string; blob: BlobRef; size: number; name?: string }
  | { type: 'resource_link'; name: string; mimeType?: string; blob?: BlobRef; size?: number; uri?: string }
  | { type: 'resource'; resource: { uri: string; mimeType?: string; text: string } };

/** A file an agent's tool changed (ACP's `diff`): `oldText` null for a new file. */
export interface DiffPart {
  type: 'diff';
  path: string;
  oldText: string | null;
  newText: string;
  /** Set when the texts were over DIFF_TEXT_MAX and are not kept (the path is). */
  truncated?: true;
}

/** A command an agent's tool ran in a terminal: its output as captured (the newest kept), and how it ended. */
export interface TerminalPart {
  type: 'terminal';
  terminalId: string;
  command?: string;
  output?: string;
  exitCode?: number | null;
}

/** What a message keeps beyond its text form: a prompt's blocks, a tool result's diffs and terminals. */
export type MessagePart = ContentBlock | DiffPart | TerminalPart;
