// A streamed reply cut into Markdown blocks as it arrives: a block ends at a blank line outside a
// fenced code block. Finished blocks never change, so the page renders each once; only the open
// block is rendered again as fragments arrive. The work per fragment follows the fragment and
// the open block, not the reply.

const FENCE = /^ {0,3}(`{3,}|~{3,})/;

export class ReplyBlocks {
  /** Finished blocks, in order. */
  readonly done: string[] = [];
  /** Whole lines of the open block. */
  private open = '';
  /** The last line, until its newline arrives. */
  private partial = '';
  /** The fence that opened the code block we are in, or null. */
  private fence: string | null = null;

  push(text: string): void {
    const lines = (this.partial + text).split('\n');
    this.partial = lines.pop()!;
    for (const line of lines) this.line(line);
  }

  /** The open block as it stands, with the line still arriving. */
  get tail(): string {
    return this.open + this.partial;
  }

  private line(line: string): void {
    const fence = FENCE.exec(line)?.[1];
    if (fence !== undefined) {
      if (this.fence === null) this.fence = fence;
      else if (fence[0] === this.fence[0] && fence.length >= this.fence.length) this.fence = null;
    }
    this.open += `${line}\n`;
    if (this.fence === null && line.trim() === '' && this.open.trim() !== '') {
      this.done.push(this.open);
      this.open = '';
    }
  }
}
