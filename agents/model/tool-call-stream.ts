// Tool calls arrive in fragments (reference/toolchain.md §8): only `index` is always there, `id`
// and the name come once, the arguments as text to append. Some servers (Ollama) reuse index 0
// for every call of a parallel batch and differ only by `id`: a new id at a used index is a new call.
import type { ToolCall } from '../../protocol/chat.js';

/** `index` may be missing (some servers leave it out): such fragments share one slot, told apart by id. */
export interface ToolCallFragment {
  index: number | undefined;
  id?: string | null | undefined;
  function?: { name?: string | null | undefined; arguments?: string | null | undefined } | undefined;
}

interface Partial {
  id: string;
  name: string;
  args: string;
}

export class ToolCallStream {
  private readonly calls: Partial[] = [];
  private readonly atIndex = new Map<number | undefined, Partial>();

  add(fragment: ToolCallFragment): void {
    let call = this.atIndex.get(fragment.index);
    if (call === undefined || (fragment.id && call.id && fragment.id !== call.id)) {
      call = { id: '', name: '', args: '' };
      this.calls.push(call);
      this.atIndex.set(fragment.index, call);
    }
    if (fragment.id && !call.id) call.id = fragment.id;
    const name = fragment.function?.name;
    if (name && !call.name) call.name = name;
    const args = fragment.function?.arguments;
    if (args) call.args += args;
  }

  get size(): number {
    return this.calls.length;
  }

  /** The calls in order of first appearance; a server that sent no id gets one made up, unique in the turn. */
  finish(idPrefix: string): ToolCall[] {
    return this.calls.map((call, i) => ({
      id: call.id || `${idPrefix}-${i}`,
      type: 'function',
      function: { name: call.name, arguments: call.args },
    }));
  }
}
