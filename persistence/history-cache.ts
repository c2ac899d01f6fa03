// The sessions' histories as last committed, kept in the host so that a turn of a session in the
// cache reads nothing back from the database (a long session paid for its length on every model
// call). Bounded in bytes, least recently used out. It changes only after a transaction has
// committed (the store tells it what was written), so it never holds what a rollback undid. An
// entry is the session's whole stored history: a read that misses loads all of it. A read that
// waits on the database (PostgreSQL) may be overtaken by a commit of the same session: its answer
// is then too old to keep, and is only returned.
import type { ChatMessage } from '../protocol/chat.js';

/** What a message costs the cache beyond its text (object, array slot, strings' headers). */
const MESSAGE_OVERHEAD_BYTES = 96;

/** A read from the database in flight: whether a commit changed its session meanwhile. */
export interface ReadTicket {
  overtaken: boolean;
}

interface Entry {
  /** Frozen: agents are handed these messages, and must not change what the cache holds. */
  messages: ChatMessage[];
  bytes: number;
}

export class HistoryCache {
  private readonly entries = new Map<string, Entry>();
  private totalBytes = 0;
  private readonly readsInFlight = new Map<string, Set<ReadTicket>>();

  constructor(private readonly maxBytes: number) {}

  get bytes(): number {
    return this.totalBytes;
  }

  get sessions(): number {
    return this.entries.size;
  }

  /** Messages [from, to) of the session's history, or undefined when it is not cached. */
  read(sid: string, from: number, to: number): ChatMessage[] | undefined {
    const entry = this.entries.get(sid);
    if (entry === undefined) return undefined;
    this.entries.delete(sid);
    this.entries.set(sid, entry);
    return entry.messages.slice(from, Math.min(to, entry.messages.length));
  }

  /** A read of the session's history from the database begins; `endRead` tells if its answer may be kept. */
  startRead(sid: string): ReadTicket {
    const ticket = { overtaken: false };
    const tickets = this.readsInFlight.get(sid) ?? new Set<ReadTicket>();
    tickets.add(ticket);
    this.readsInFlight.set(sid, tickets);
    return ticket;
  }

  /** The read ended (answered or failed): true when no commit of the session overtook it. */
  endRead(sid: string, ticket: ReadTicket): boolean {
    const tickets = this.readsInFlight.get(sid);
    tickets?.delete(ticket);
    if (tickets?.size === 0) this.readsInFlight.delete(sid);
    return !ticket.overtaken;
  }

  /** The session's whole stored history, just read from the database. */
  fill(sid: string, messages: readonly ChatMessage[]): void {
    this.forget(sid);
    const frozen = messages.map(freezeMessage);
    this.place(sid, { messages: frozen, bytes: frozen.reduce((sum, m) => sum + messageBytes(m), 0) });
  }

  /** Committed: messages at firstSeq…; an entry that does not end exactly there no longer mirrors the store. */
  appended(sid: string, firstSeq: number, messages: readonly ChatMessage[]): void {
    this.overtakeReads(sid);
    const entry = this.entries.get(sid);
    if (entry === undefined) return;
    if (entry.messages.length !== firstSeq) {
      this.forget(sid);
      return;
    }
    for (const message of messages) {
      const frozen = freezeMessage(message);
      entry.messages.push(frozen);
      entry.bytes += messageBytes(frozen);
      this.totalBytes += messageBytes(frozen);
    }
    this.evict();
  }

  /** Committed: the stored history keeps only its first `keep` messages. */
  truncated(sid: string, keep: number): void {
    this.overtakeReads(sid);
    const entry = this.entries.get(sid);
    if (entry === undefined || entry.messages.length <= keep) return;
    for (const message of entry.messages.splice(keep)) {
      entry.bytes -= messageBytes(message);
      this.totalBytes -= messageBytes(message);
    }
  }

  forget(sid: string): void {
    const entry = this.entries.get(sid);
    if (entry === undefined) return;
    this.entries.delete(sid);
    this.totalBytes -= entry.bytes;
  }

  private overtakeReads(sid: string): void {
    for (const ticket of this.readsInFlight.get(sid) ?? []) ticket.overtaken = true;
  }

  private place(sid: string, entry: Entry): void {
    // A history larger than the whole cache is read from the store each time, never kept.
    if (entry.bytes > this.maxBytes) return;
    this.entries.set(sid, entry);
    this.totalBytes += entry.bytes;
    this.evict();
  }

  private evict(): void {
    for (const [sid] of this.entries) {
      if (this.totalBytes <= this.maxBytes) return;
      this.forget(sid);
    }
  }
}

/** A frozen copy: the caller's objects stay its own. */
function freezeMessage(message: ChatMessage): ChatMessage {
  const copy: ChatMessage = { role: message.role, content: message.content };
  if (message.tool_calls) {
    copy.tool_calls = Object.freeze(
      message.tool_calls.map((call) => Object.freeze({ id: call.id, type: call.type, function: Object.freeze({ ...call.function }) })),
    ) as ChatMessage['tool_calls'];
  }
  if (message.tool_call_id !== undefined) copy.tool_call_id = message.tool_call_id;
  if (message.parts !== undefined) copy.parts = Object.freeze(message.parts.map((part) => Object.freeze({ ...part }))) as ChatMessage['parts'];
  return Object.freeze(copy);
}

function messageBytes(message: ChatMessage): number {
  let bytes = MESSAGE_OVERHEAD_BYTES + textBytes(message.content) + textBytes(message.role);
  for (const call of message.tool_calls ?? []) bytes += textBytes(call.id) + textBytes(call.function.name) + textBytes(call.function.arguments) + MESSAGE_OVERHEAD_BYTES;
  // A part names its bytes (a blob): what is kept of it is its JSON.
  if (message.parts !== undefined) bytes += textBytes(JSON.stringify(message.parts));
  return bytes;
}

/**
 * A text costs twice: as a string (two bytes a UTF-16 unit at most), and in the UTF-8 JSON that
 * the model agent keeps of a cached history for its next request (agents/model/api-history.ts).
 */
function textBytes(text: string): number {
  return 2 * text.length + Buffer.byteLength(text);
}
