// A model call's messages without converting the whole history again. Converting a session's
// history (and counting its characters for the compression estimate) on every call made a long
// session's turns slower with each turn it had (0.55 to 0.7 ms a call at 2,000 messages, 8% of the
// host's CPU in a perf profile).
// What was converted is kept per history, up to its last message outside a call block, and a
// call converts only the messages after it.
//
// Why keeping it is exact: the host hands an agent its history cache's own frozen messages, and a
// cached history changes only by appending, truncating or being read again from the store, each
// time with new message objects. So the converted part still applies exactly when the history
// still has, at the same place, the last message it was made from.
//
// Why it is bounded: the part is kept weakly under the history's first message, so it lives as
// long as the history cache holds that history (a history read from the store for one turn is
// converted for that turn and then collected). It adds an array slot a message to what the cache
// holds, and a copy of each assistant message that called tools.
import type { ChatMessage } from '../../protocol/chat.js';
import { characterCount, Repair, type ApiMessage } from './history.js';

interface ConvertedPart {
  /** The API messages of history[0, consumed): final, since no call block is open at its end. */
  api: ApiMessage[];
  chars: number;
  consumed: number;
  /** history[consumed - 1] when it was converted. */
  last: ChatMessage | undefined;
}

export interface CallMessages {
  messages: ApiMessage[];
  /** Their characters, for the prompt-size estimate. */
  chars: number;
}

export class ApiHistories {
  private readonly parts = new WeakMap<ChatMessage, ConvertedPart>();

  /** The system prompt, the history (repaired), then what this turn added, as the API takes them. */
  messages(system: ApiMessage, history: readonly ChatMessage[], added: readonly ChatMessage[]): CallMessages {
    const part = this.convertedPart(history);
    const rest = new Repair();
    for (let i = part.consumed; i < history.length; i++) rest.add(history[i]!);
    for (const message of added) rest.add(message);
    const tail = rest.finish();
    const messages = [system];
    for (const message of part.api) messages.push(message);
    for (const message of tail) messages.push(message);
    return { messages, chars: characterCount([system]) + part.chars + characterCount(tail) };
  }

  private convertedPart(history: readonly ChatMessage[]): ConvertedPart {
    const first = history[0];
    if (first === undefined) return { api: [], chars: 0, consumed: 0, last: undefined };
    let part = this.parts.get(first);
    if (part === undefined || !stillApplies(part, history)) {
      part = { api: [], chars: 0, consumed: 0, last: undefined };
      this.parts.set(first, part);
    }
    extend(part, history);
    return part;
  }
}

function stillApplies(part: ConvertedPart, history: readonly ChatMessage[]): boolean {
  return part.consumed <= history.length && (part.consumed === 0 || history[part.consumed - 1] === part.last);
}

/** Converts the messages after the part, and keeps what is final: up to the last one outside a call block. */
function extend(part: ConvertedPart, history: readonly ChatMessage[]): void {
  const repair = new Repair();
  let settledAt = part.consumed;
  let settledOut = 0;
  for (let i = part.consumed; i < history.length; i++) {
    repair.add(history[i]!);
    if (repair.settled) {
      settledAt = i + 1;
      settledOut = repair.out.length;
    }
  }
  if (settledAt === part.consumed) return;
  const final = repair.out.slice(0, settledOut);
  for (const message of final) part.api.push(message);
  part.chars += characterCount(final);
  part.consumed = settledAt;
  part.last = history[settledAt - 1];
}
