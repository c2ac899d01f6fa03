// How many terminal columns text takes, for keeping track of where the cursor is. It follows the
// rules readline uses to place its own prompt (escape sequences take none, tabs stop every 8
// columns, East Asian wide characters take two and never split across a row's end), so that the
// chat's output and readline's prompt agree on where each row ends. Characters outside the ranges
// below count as one column: an exotic script may misplace the cursor, never lose text.
import { stripVTControlCharacters } from 'node:util';

const TAB_COLUMNS = 8;

/** A cursor's place in wrapped text: whole rows filled, and the column in the row it is on. */
export interface DisplayPosition {
  rows: number;
  cols: number;
}

/** The column offset (counted across wrapped rows) after `text` is written at `offset` in rows `columns` wide. */
export function advance(offset: number, text: string, columns: number): number {
  let at = offset;
  for (const char of stripVTControlCharacters(text)) {
    if (char === '\t') {
      at += TAB_COLUMNS - (at % TAB_COLUMNS);
      continue;
    }
    const width = charWidth(char.codePointAt(0)!);
    if (width === 2 && (at + 1) % columns === 0) at++;
    at += width;
  }
  return at;
}

export function positionOf(offset: number, columns: number): DisplayPosition {
  const cols = offset % columns;
  return { rows: (offset - cols) / columns, cols };
}

function charWidth(code: number): 0 | 1 | 2 {
  if (isZeroWidth(code)) return 0;
  return isWide(code) ? 2 : 1;
}

function isZeroWidth(code: number): boolean {
  return (
    code < 0x20 ||
    (code >= 0x7f && code < 0xa0) ||
    (code >= 0x300 && code <= 0x36f) ||
    (code >= 0x200b && code <= 0x200f) ||
    (code >= 0x20d0 && code <= 0x20ff) ||
    (code >= 0xfe00 && code <= 0xfe0f) ||
    (code >= 0xfe20 && code <= 0xfe2f) ||
    (code >= 0xe0100 && code <= 0xe01ef)
  );
}

function isWide(code: number): boolean {
  return (
    (code >= 0x1100 && code <= 0x115f) ||
    code === 0x2329 ||
    code === 0x232a ||
    (code >= 0x2e80 && code <= 0x3247 && code !== 0x303f) ||
    (code >= 0x3250 && code <= 0x4dbf) ||
    (code >= 0x4e00 && code <= 0xa4c6) ||
    (code >= 0xa960 && code <= 0xa97c) ||
    (code >= 0xac00 && code <= 0xd7a3) ||
    (code >= 0xf900 && code <= 0xfaff) ||
    (code >= 0xfe10 && code <= 0xfe19) ||
    (code >= 0xfe30 && code <= 0xfe6b) ||
    (code >= 0xff01 && code <= 0xff60) ||
    (code >= 0xffe0 && code <= 0xffe6) ||
    (code >= 0x1b000 && code <= 0x1b001) ||
    (code >= 0x1f200 && code <= 0x1f251) ||
    (code >= 0x1f300 && code <= 0x1f64f) ||
    (code >= 0x1f900 && code <= 0x1f9ff) ||
    (code >= 0x20000 && code <= 0x3fffd)
  );
}
