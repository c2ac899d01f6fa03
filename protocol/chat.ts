import { checkedParts, type MessagePart } from './content.js';

/** A function call an assistant message asked for (the Chat Completions shape, AGENT.md §3). */
export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/**
 * One entry of a session's history, as stored and as handed to an agent. `tool_calls` is set on
 * an assistant message that called tools, `tool_call_id` on a `tool` message (a call's result).
 */
export interface ChatMessage {
  role: string;
  content: string;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  /** What it carries beyond text (PROTOCOL.md §2.4): a prompt's blocks, a tool result's diffs and terminals; `content` is their text form. */
  parts?: MessagePart[];
}

/** Agents are user code: keeps a message's documented fields only, with their documented types. */
export function sanitizeMessage(message: ChatMessage): ChatMessage {
  const clean: ChatMessage = { role: String(message.role), content: String(message.content ?? '') };
  if (Array.isArray(message.tool_calls) && message.tool_calls.length > 0) {
    clean.tool_calls = message.tool_calls.map((call) => ({
      id: String(call?.id),
      type: 'function',
      function: { name: String(call?.function?.name), arguments: String(call?.function?.arguments ?? '') },
    }));
  }
  if (message.tool_call_id !== undefined && message.tool_call_id !== null) clean.tool_call_id = String(message.tool_call_id);
  const parts = message.parts === undefined ? [] : checkedParts(message.parts);
  if (parts.length > 0) clean.parts = parts;
  return clean;
}
