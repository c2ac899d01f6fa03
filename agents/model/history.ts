// The history in the Chat Completions shape (AGENT.md §3), and its repair: every request the
// agent sends pairs each assistant tool call with a `tool` result. A turn interrupted or killed
// during its tool calls leaves calls without results; an API rejects such a request, so each
// missing result is filled in, and a result that answers no call is left out.
import type { ChatMessage, ToolCall } from '../../protocol/chat.js';

export type ApiMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string | ApiContentPart[] }
  | { role: 'assistant'; content: string | null; tool_calls?: ToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

/** A user message's parts in Chat Completions: text, and images as `image_url` (data URLs here). */
export type ApiContentPart = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } };

export const MISSING_RESULT = '(no result: the turn was interrupted)';

/**
 * Converts messages one by one into the API's shape in `out`, pairing each call with a result. It
 * allocates only where it must: a user or plain assistant message with no tool fields is already
 * in the API's shape and is passed as it is (the history cache's messages are frozen; the SDK only
 * serializes them).
 */
export class Repair {
  private awaiting: ToolCall[] = [];
  private readonly answered = new Set<string>();

  constructor(readonly out: ApiMessage[] = []) {}

  /** No call block is open: what `out` holds is final, whatever comes next. */
  get settled(): boolean {
    return this.awaiting.length === 0;
  }

  add(message: ChatMessage): void {
    if (message.role === 'tool') {
      const id = message.tool_call_id;
      if (id !== undefined && this.awaiting.some((call) => call.id === id) && !this.answered.has(id)) {
        this.answered.add(id);
        this.out.push({ role: 'tool', tool_call_id: id, content: message.content });
      }
      return;
    }
    this.closeCallBlock();
    this.out.push(apiMessage(message));
    if (message.role === 'assistant' && message.tool_calls && message.tool_calls.length > 0) this.awaiting = message.tool_calls;
  }

  /** A message already in the API's shape (a prompt with its images): after any open call block. */
  addConverted(message: ApiMessage): void {
    this.closeCallBlock();
    this.out.push(message);
  }

  /** Closes the open call block, if any (its missing results filled in), and returns `out`. */
  finish(): ApiMessage[] {
    this.closeCallBlock();
    return this.out;
  }

  private closeCallBlock(): void {
    if (this.awaiting.length === 0) return;
    for (const call of this.awaiting) {
      if (!this.answered.has(call.id)) this.out.push({ role: 'tool', tool_call_id: call.id, content: MISSING_RESULT });
    }
    this.awaiting = [];
    this.answered.clear();
  }
}

/** A message other than a tool result, in the API's shape: itself when it already is (any other role is a user's). */
function apiMessage(message: ChatMessage): ApiMessage {
  if (message.role === 'assistant' && message.tool_calls && message.tool_calls.length > 0) {
    return { role: 'assistant', content: message.content === '' ? null : message.content, tool_calls: message.tool_calls };
  }
  const role = message.role === 'assistant' || message.role === 'system' ? message.role : 'user';
  const plain = message.role === role && message.tool_calls === undefined && message.tool_call_id === undefined;
  return plain ? (message as ApiMessage) : { role, content: message.content };
}

/** Characters a history sends, for the ~4-characters-a-token estimate. */
export function characterCount(messages: readonly ApiMessage[]): number {
  let count = 0;
  for (const m of messages) {
    // An image counts as its text parts do not: a model prices it apart, so only text is estimated here.
    count += typeof m.content === 'string' ? m.content.length : (m.content ?? []).reduce((sum, part) => sum + (part.type === 'text' ? part.text.length : 0), 0);
    if (m.role === 'assistant' && m.tool_calls) for (const call of m.tool_calls) count += call.function.name.length + call.function.arguments.length;
  }
  return count;
}

/**
 * Where a compression cuts: everything before it is summarized, the last `keep` messages stay,
 * moved earlier so that a kept tool result never loses the call it answers.
 */
export function compressionCut(history: readonly ChatMessage[], keep: number): number {
  let cut = Math.max(0, history.length - keep);
  while (cut > 0 && history[cut]?.role === 'tool') cut--;
  return cut;
}
