// The questions a turn asks (clarify, approval: PROTOCOL.md §1.4) as the edge's doors see them, and
// what a door's answer is in the client protocol: one shape for AG-UI, MCP and A2A.
import { isRecord, type UnknownRecord } from '../protocol/fields.js';

/** A server request of the session as the client protocol sends it (PROTOCOL.md §1.4). */
export interface Question {
  id: string;
  method: string;
  params: UnknownRecord;
}

/**
 * A door's answer (an AG-UI resume's payload, an MCP `answer`, an A2A reply) as the client
 * protocol's answer to that question (PROTOCOL.md §1.4): an approval's `{approved}` (or `true`,
 * or an option's id), a batch's answers by question id, a clarify's text.
 */
export function answerFrom(question: Question, status: 'resolved' | 'cancelled', payload: unknown): { result: unknown } | { error: unknown } {
  if (status === 'cancelled') return { error: { code: 4000, message: 'declined' } };
  if (question.method === 'approval.request') {
    if (isRecord(payload) && typeof payload['option_id'] === 'string') return { result: { option_id: payload['option_id'] } };
    const approved = isRecord(payload) ? payload['approved'] === true : payload === true;
    return { result: { approved } };
  }
  if (Array.isArray(question.params['questions'])) return { result: { answers: isRecord(payload) ? payload : {} } };
  const answer = isRecord(payload) && 'answer' in payload ? payload['answer'] : payload;
  return { result: { answer: typeof answer === 'string' ? answer : JSON.stringify(answer ?? null) } };
}

/** A person's (or an agent's) text as an approval: yes, ok, approve(d), true; anything else denies. */
export function approves(text: string): boolean {
  return /^(y|yes|approve|approved|ok|true)$/i.test(text.trim());
}
