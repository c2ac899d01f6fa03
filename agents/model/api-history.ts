// A model call's messages without converting and serializing the whole history again. Converting
// a session's history (and counting its characters for the compression estimate) on every call
// made a long session's turns slower with each turn it had (0.55 to 0.7 ms a call at 2,000
// messages, 8% of the host's CPU in a perf profile); serializing it cost as much again (0.17 ms at
// 600 messages, 0.53 ms at 2,000).
// What was converted is kept per history as UTF-8 JSON, up to its last message outside a call
// block, and a call converts and serializes only the messages after it. Kept as bytes, not as a
// string: a string grown a turn at a time and joined into each body cost 0.3 ms a call at 1,100
// messages, bytes copied into the body 0.03 to 0.06 ms.
//
// Why keeping it is exact: the host hands an agent its history cache's own frozen messages, and a
// cached history changes only by appending, truncating or being read again from the store, each
// time with new message objects. So the converted part still applies exactly when the history
// still has, at the same place, the last message it was made from.
//
// Why it is bounded: the part is kept weakly under the history's first message, so it lives as
// long as the history cache holds that history (a history read from the store for one turn is
// converted for that turn and then collected). Its bytes are counted by the cache, with the
// messages they were made from (persistence/history-cache.ts).
import type { ChatMessage } from '../../protocol/chat.js';
import { characterCount, Repair, type ApiMessage } from './history.js';

interface ConvertedPart {
  /** The API messages of history[0, consumed) as JSON, each after a comma: final, since no call block is open at its end. */
  json: Buffer;
  chars: number;
  consumed: number;
  /** history[consumed - 1] when it was converted. */
  last: ChatMessage | undefined;
}

export interface CallMessages {
  /** The messages as a JSON array (what `JSON.stringify` makes of them) in UTF-8, in pieces to send one after the other. */
  json: Buffer[];
  /** Their characters, for the prompt-size estimate. */
  chars: number;
}

export class ApiHistories {
  private readonly parts = new WeakMap<ChatMessage, ConvertedPart>();

  /** The system prompt, the history (repaired), then what this turn added, as the API takes them. */
  /** `prompt`: the turn's prompt (added[0]) as the API takes it, when it carries images. */
  messages(system: ApiMessage, history: readonly ChatMessage[], added: readonly ChatMessage[], prompt?: ApiMessage): CallMessages {
    const part = this.convertedPart(history);
    const rest = new Repair();
    for (let i = part.consumed; i < history.length; i++) rest.add(history[i]!);
    added.forEach((message, i) => (i === 0 && prompt !== undefined ? rest.addConverted(prompt) : rest.add(message)));
    const tail = rest.finish();
    return {
      json: [Buffer.from(`[${JSON.stringify(system)}`), part.json, Buffer.from(`${afterCommas(tail)}]`)],
      chars: characterCount([system]) + part.chars + characterCount(tail),
    };
  }

  private convertedPart(history: readonly ChatMessage[]): ConvertedPart {
    const first = history[0];
    if (first === undefined) return emptyPart();
    let part = this.parts.get(first);
    if (part === undefined || !stillApplies(part, history)) {
      part = emptyPart();
      this.parts.set(first, part);
    }
    extend(part, history);
    return part;
  }
}

const emptyPart = (): ConvertedPart => ({ json: Buffer.alloc(0), chars: 0, consumed: 0, last: undefined });

/** The bytes and then the text's, in memory of their own: a slice of Node's shared pool would keep all 8 KiB of it alive. */
function appended(bytes: Buffer, text: string): Buffer {
  const next = Buffer.allocUnsafeSlow(bytes.length + Buffer.byteLength(text));
  bytes.copy(next);
  next.write(text, bytes.length);
  return next;
}

/** The messages as JSON, each after a comma: what follows the array's first element. */
function afterCommas(messages: readonly ApiMessage[]): string {
  let text = '';
  for (const message of messages) text += `,${JSON.stringify(message)}`;
  return text;
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
  part.json = appended(part.json, afterCommas(final));
  part.chars += characterCount(final);
  part.consumed = settledAt;
  part.last = history[settledAt - 1];
}
