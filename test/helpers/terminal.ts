// A real terminal for tests: a tmux server of the test's own (its socket in a temp folder) runs a
// command in a pane of a fixed size; keys are typed with send-keys and the screen is read with
// capture-pane, as a person would see it.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

export interface TerminalSize {
  columns: number;
  rows: number;
}

const POLL_MS = 25;
const DEFAULT_WAIT_MS = 15_000;

export class Terminal {
  private readonly socket: string;
  private running = false;

  constructor(folder: string) {
    this.socket = join(folder, 'tmux.sock');
  }

  start(command: string, size: TerminalSize): void {
    this.tmux(['new-session', '-d', '-s', 'test', '-x', String(size.columns), '-y', String(size.rows), command]);
    this.running = true;
  }

  /** Types text as keys, character by character. */
  type(text: string): void {
    this.tmux(['send-keys', '-t', 'test', '-l', text]);
  }

  /** Presses named keys (tmux's names: Enter, Left, C-d). */
  press(...keys: string[]): void {
    this.tmux(['send-keys', '-t', 'test', ...keys]);
  }

  /** The screen's lines, trailing spaces and empty lines at the bottom dropped. */
  screen(): string[] {
    const lines = this.tmux(['capture-pane', '-p', '-t', 'test']).split('\n').map((line) => line.trimEnd());
    while (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
    return lines;
  }

  cursor(): { x: number; y: number } {
    const [x, y] = this.tmux(['display-message', '-p', '-t', 'test', '#{cursor_x} #{cursor_y}']).trim().split(' ').map(Number);
    return { x: x!, y: y! };
  }

  /**
   * Resolves with the screen once `holds` is true of it. A screen has no events to wait on, so it
   * is read every 25 ms, up to a bound; the error shows the last screen.
   */
  async until(holds: (screen: string[]) => boolean, what: string, timeoutMs = DEFAULT_WAIT_MS): Promise<string[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const screen = this.screen();
      if (holds(screen)) return screen;
      if (Date.now() > deadline) throw new Error(`the screen never showed ${what} within ${timeoutMs} ms; it shows:\n${screen.join('\n')}`);
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }

  /** Resolves once some line of the screen contains `text`. */
  untilShown(text: string, timeoutMs?: number): Promise<string[]> {
    return this.until((screen) => screen.some((line) => line.includes(text)), JSON.stringify(text), timeoutMs);
  }

  stop(): void {
    if (!this.running) return;
    this.running = false;
    try {
      this.tmux(['kill-server']);
    } catch {
      // the command in the pane ended, and the server with it
    }
  }

  private tmux(args: string[]): string {
    return execFileSync('tmux', ['-S', this.socket, ...args], { encoding: 'utf8', timeout: 10_000 });
  }
}
