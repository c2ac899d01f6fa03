/** One entry of a session's history, as stored and as handed to an agent. */
export interface ChatMessage {
  role: string;
  content: string;
}
