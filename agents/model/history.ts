// The history in the Chat Completions shape (AGENT.md §3), and its repair: every request the
// agent sends pairs each assistant tool call with a `tool` result. A turn interrupted or killed
// during its tool calls leaves calls without results; an API rejects such a request, so each
// missing result is filled in, and a result that answers no call is left out.
import type { ChatMessage, ToolCall } from '../../protocol/chat.js';

export type ApiMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: ToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

export const MISSING_RESULT = '(no result: the turn was interrupted)';

/**
 * The API messages of the history's parts, in order, repaired; `system` first when given. It runs
 * over the whole history on every model call, so it allocates only where it must: a user or plain
 * assistant message with no tool fields is already in the API's shape and is passed as it is (the
 * history cache's messages are frozen; the SDK only serializes them).
 */
export function toApiMessages(parts: readonly (readonly ChatMessage[])[], system?: ApiMessage): ApiMessage[] {
  const out: ApiMessage[] = system === undefined ? [] : [system];
  let awaiting: ToolCall[] = [];
  const answered = new Set<string>();
  const closeCallBlock = (): void => {
    if (awaiting.length === 0) return;
    for (const call of awaiting) {
      if (!answered.has(call.id)) out.push({ role: 'tool', tool_call_id: call.id, content: MISSING_RESULT });
    }
    awaiting = [];
    answered.clear();
  };
  for (const part of parts) {
    for (const message of part) {
      if (message.role === 'tool') {
        const id = message.tool_call_id;
        if (id !== undefined && awaiting.some((call) => call.id === id) && !answered.has(id)) {
          answered.add(id);
          out.push({ role: 'tool', tool_call_id: id, content: message.content });
        }
        continue;
      }
      closeCallBlock();
      out.push(apiMessage(message));
      if (message.role === 'assistant' && message.tool_calls && message.tool_calls.length > 0) awaiting = message.tool_calls;
    }
  }
  closeCallBlock();
  return out;
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
    count += (m.content ?? '').length;
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
