// The chat's input line at a terminal, with everything else written above it. readline draws the
// prompt and what the person types; this class keeps that region at the bottom: output is written
// by erasing the region, writing the text, and drawing the region again with the typed text and
// the cursor where they were. An output line still open (a reply mid-sentence) sits on the row
// above the prompt, and the next fragment goes back up to its end. A question (clarify, approval)
// takes the input line for its answer; the line being typed is put aside and comes back after.
//
// readline keeps `prevRows`, the cursor's row in its region, to find the region again on its next
// redraw; every redraw here puts the cursor back at the same place in the region, so that stays true.
import { clearScreenDown, createInterface, cursorTo, moveCursor, type Interface } from 'node:readline';
import { advance, positionOf, type DisplayPosition } from './display-width.js';

interface Draft {
  line: string;
  cursor: number;
}

interface Question {
  answer(line: string | null): void;
  draft: Draft;
}

const DEFAULT_COLUMNS = 80;

export class TerminalPrompt {
  private readonly rl: Interface;
  private readonly out: NodeJS.WriteStream;
  /** Shown whenever no question holds the input; null when only questions read (one turn from the command line). */
  private linePrompt: string | null = null;
  private readonly sentLines: string[] = [];
  private lineWaiter: ((line: string | null) => void) | null = null;
  private question: Question | null = null;
  private drawn = false;
  private closed = false;
  /** Columns written on the output line not yet ended, counted across its wrapped rows; 0 at a line's start. */
  private openOffset = 0;
  /** The open output line was moved onto the row above the prompt: its next fragment goes back up there. */
  private openAbove = false;
  /** A line sent with Enter cut an open output line: the break is on screen, so the output's own next break is not written. */
  private breakShown = false;

  constructor(onInterrupt: () => void) {
    this.out = process.stderr;
    this.rl = createInterface({ input: process.stdin, output: this.out, terminal: true });
    this.rl.on('SIGINT', onInterrupt);
    this.rl.on('line', (line) => this.onLine(line));
    this.rl.on('close', () => this.onClose());
  }

  /** From now on the prompt stays on screen; lines sent at it are read with nextLine(). */
  showLinePrompt(prompt: string): void {
    this.linePrompt = prompt;
    if (this.question === null) this.draw(prompt);
  }

  /** The next line sent at the line prompt; null once input ends (Ctrl-D). */
  nextLine(): Promise<string | null> {
    if (this.sentLines.length > 0) return Promise.resolve(this.sentLines.shift()!);
    if (this.closed) return Promise.resolve(null);
    return new Promise((resolve) => (this.lineWaiter = resolve));
  }

  /** Asks at the input line; what was being typed comes back after. Null when withdrawn or input ended. */
  ask(prompt: string, signal?: AbortSignal): Promise<string | null> {
    if (this.closed || signal?.aborted) return Promise.resolve(null);
    return new Promise((resolve) => {
      const question: Question = { answer: resolve, draft: this.takeDraft() };
      this.question = question;
      this.draw(prompt);
      signal?.addEventListener(
        'abort',
        () => {
          if (this.question !== question) return;
          this.takeDraft();
          this.endQuestion(question, null);
        },
        { once: true },
      );
    });
  }

  /** Writes output above the input line; `stream` alone when it is not this terminal. */
  write(stream: NodeJS.WriteStream, text: string): void {
    if (stream.isTTY !== true || this.out.isTTY !== true) {
      stream.write(text);
      return;
    }
    if (!this.drawn) {
      this.emit(stream, text);
      return;
    }
    const cursor = this.rl.getCursorPos();
    moveCursor(this.out, 0, -cursor.rows);
    cursorTo(this.out, 0);
    clearScreenDown(this.out);
    this.backToOpenLine();
    this.emit(stream, text);
    this.makeRoomForPrompt();
    this.redraw(cursor);
  }

  close(): void {
    this.rl.close();
  }

  private onLine(line: string): void {
    // readline has ended the line on screen: what was sent stays in the transcript where it is.
    this.drawn = false;
    if (this.openOffset > 0) this.cutOpenLine();
    const question = this.question;
    if (question !== null) {
      this.endQuestion(question, line);
      return;
    }
    if (this.lineWaiter !== null) {
      const waiter = this.lineWaiter;
      this.lineWaiter = null;
      waiter(line);
    } else {
      this.sentLines.push(line);
    }
    if (this.linePrompt !== null) this.draw(this.linePrompt);
  }

  private onClose(): void {
    this.closed = true;
    if (this.drawn) {
      cursorTo(this.out, 0);
      clearScreenDown(this.out);
      this.drawn = false;
      this.backToOpenLine();
    }
    this.lineWaiter?.(null);
    this.lineWaiter = null;
    if (this.question !== null) this.endQuestion(this.question, null);
  }

  private endQuestion(question: Question, answer: string | null): void {
    this.question = null;
    if (this.linePrompt !== null && !this.closed) {
      this.draw(this.linePrompt);
      this.restoreDraft(question.draft);
    } else if (this.drawn) {
      this.hide();
    }
    question.answer(answer);
  }

  private draw(prompt: string): void {
    if (!this.drawn) this.makeRoomForPrompt();
    this.rl.setPrompt(prompt);
    this.rl.prompt(true);
    this.drawn = true;
  }

  /** Removes the prompt through readline itself, so that its idea of where its region is stays right. */
  private hide(): void {
    this.takeDraft();
    this.rl.setPrompt('');
    this.rl.prompt(true);
    cursorTo(this.out, 0);
    this.drawn = false;
    this.backToOpenLine();
  }

  /** readline clears the row it draws on: an open output line first gets a break, and is continued from below. */
  private makeRoomForPrompt(): void {
    if (this.openOffset === 0 || this.openAbove) return;
    this.out.write('\n');
    this.openAbove = true;
  }

  private backToOpenLine(): void {
    if (!this.openAbove) return;
    this.openAbove = false;
    const end = positionOf(this.openOffset, this.columns());
    // A line that filled its last row exactly continues on the row below, where the cursor already is.
    if (end.cols === 0) return;
    moveCursor(this.out, 0, -1);
    cursorTo(this.out, end.cols);
  }

  private cutOpenLine(): void {
    this.openOffset = 0;
    this.openAbove = false;
    this.breakShown = true;
  }

  /** Writes output at the cursor and keeps count of the open line. A lone `\r` would move the cursor behind the count's back. */
  private emit(stream: NodeJS.WriteStream, text: string): void {
    let out = text.replace(/\r\n?/g, '\n');
    if (this.breakShown && out !== '') {
      this.breakShown = false;
      if (out.startsWith('\n')) out = out.slice(1);
    }
    if (out === '') return;
    stream.write(out);
    const lastBreak = out.lastIndexOf('\n');
    this.openOffset = lastBreak === -1 ? advance(this.openOffset, out, this.columns()) : advance(0, out.slice(lastBreak + 1), this.columns());
  }

  /** Draws the prompt and the typed text as readline would, and puts the cursor back at `cursor`. */
  private redraw(cursor: DisplayPosition): void {
    const text = this.rl.getPrompt() + this.rl.line;
    const end = positionOf(advance(0, text, this.columns()), this.columns());
    this.out.write(text);
    // As readline does: a line that ends exactly at a row's end needs a character to move the cursor down.
    if (end.cols === 0) this.out.write(' ');
    cursorTo(this.out, cursor.cols);
    moveCursor(this.out, 0, cursor.rows - end.rows);
  }

  /** Takes the typed text off the input line (with readline's own editing keys) and returns it. */
  private takeDraft(): Draft {
    const draft = { line: this.rl.line, cursor: this.rl.cursor };
    if (draft.line !== '') {
      this.rl.write(null, { ctrl: true, name: 'e' });
      this.rl.write(null, { ctrl: true, name: 'u' });
    }
    return draft;
  }

  private restoreDraft(draft: Draft): void {
    if (draft.line === '') return;
    this.rl.write(draft.line);
    const charactersAfterCursor = [...draft.line.slice(draft.cursor)].length;
    for (let i = 0; i < charactersAfterCursor; i++) this.rl.write(null, { name: 'left' });
  }

  private columns(): number {
    return this.out.columns || DEFAULT_COLUMNS;
  }
}
