// How a tool call's arguments are shown to the person asked to approve it (AGENT.md §2). What is
// shown is what will run: the parsed arguments written out again, so that of two equal keys only
// the winning value appears, with every character that a terminal would act on (a `\r` that
// returns to the line's start, C1 controls, bidirectional overrides) written as an escape. Cut
// arguments say how much was left out; the whole is in the request's `arguments`.

/** The longest arguments text in an approval question. */
export const SHOWN_ARGUMENTS_MAX = 500;

// C0 and C1 controls, DEL, zero-width and bidirectional marks, line and paragraph separators.
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/g;

export function escapeControls(text: string): string {
  return text.replace(UNSAFE, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** The arguments as JSON, safe for a terminal: whole when `max` is Infinity. */
export function shownArguments(args: unknown, max = SHOWN_ARGUMENTS_MAX): { text: string; omitted: number } {
  return cutForTerminal(JSON.stringify(args) ?? 'null', max);
}

function cutForTerminal(text: string, max: number): { text: string; omitted: number } {
  const whole = [...escapeControls(text)];
  if (whole.length <= max) return { text: whole.join(''), omitted: 0 };
  return { text: whole.slice(0, max).join(''), omitted: whole.length - max };
}

/** A text safe for a terminal, cut at 500 characters with a note of how many were left out. */
export function shownText(text: string): string {
  const cut = cutForTerminal(text, SHOWN_ARGUMENTS_MAX);
  return cut.omitted > 0 ? `${cut.text}… [${cut.omitted} more characters not shown]` : cut.text;
}

/** `tool(arguments)`, the arguments cut at 500 characters with a note of how many were left out. */
export function approvalQuestion(tool: string, args: unknown): string {
  return `${escapeControls(tool)}(${shownText(JSON.stringify(args) ?? 'null')})`;
}
