// What a message carries beyond its text (PROTOCOL.md §2.4), as a person sees it: an image by its
// file name (full size on a click), a file as a link that downloads it, a diff as a disclosure named
// by its path with its removed and added lines marked by sign as well as colour, a terminal's
// command, output and exit code.
import type { DiffPart, MessagePart, TerminalPart } from '../protocol/message-parts.js';

/** Where the page reads a blob of the open session. */
export type BlobUrl = (blob: string) => string;

export function Parts({ parts, blobUrl }: { parts: readonly MessagePart[]; blobUrl: BlobUrl }) {
  const shown = parts.filter((part) => part.type !== 'text');
  if (shown.length === 0) return null;
  return (
    <div class="parts">
      {shown.map((part, i) => (
        <Part key={i} part={part} blobUrl={blobUrl} />
      ))}
    </div>
  );
}

function Part({ part, blobUrl }: { part: MessagePart; blobUrl: BlobUrl }) {
  switch (part.type) {
    case 'image': {
      const url = blobUrl(part.blob);
      return (
        <a href={url} target="_blank" rel="noopener noreferrer" class="image">
          <img src={url} alt={part.name ?? `image (${part.mimeType})`} />
        </a>
      );
    }
    case 'audio':
      return <audio controls src={blobUrl(part.blob)} aria-label={part.name ?? 'audio'} />;
    case 'resource_link':
      if (part.blob !== undefined) {
        return (
          <a href={blobUrl(part.blob)} download={part.name} class="file">
            {part.name} ({sizeText(part.size ?? 0)})
          </a>
        );
      }
      return <span class="file">{part.name}</span>;
    case 'resource':
      return (
        <details class="file">
          <summary>{part.resource.uri}</summary>
          <pre>{part.resource.text}</pre>
        </details>
      );
    case 'diff':
      return <Diff diff={part} />;
    case 'terminal':
      return <Terminal terminal={part} />;
    default:
      return null;
  }
}

function Diff({ diff }: { diff: DiffPart }) {
  return (
    <details class="diff">
      <summary>{diff.path}</summary>
      {diff.truncated === true ? (
        <p>(too large to show)</p>
      ) : (
        <pre>
          {diffLines(diff.oldText ?? '', diff.newText).map((line, i) => (
            <div key={i} class={line.sign === '+' ? 'added' : line.sign === '-' ? 'removed' : 'same'}>
              <span aria-label={line.sign === '+' ? 'added' : line.sign === '-' ? 'removed' : undefined}>{line.sign}</span> {line.text}
            </div>
          ))}
        </pre>
      )}
    </details>
  );
}

function Terminal({ terminal }: { terminal: TerminalPart }) {
  return (
    <div class="terminal" role="group" aria-label="Terminal">
      {terminal.command !== undefined && <code>$ {terminal.command}</code>}
      {terminal.output !== undefined && <pre>{terminal.output}</pre>}
      {terminal.exitCode !== undefined && <span class="exit">exit code {terminal.exitCode === null ? '(none)' : terminal.exitCode}</span>}
    </div>
  );
}

/**
 * The lines a change kept, removed and added: what the two texts share at their start and end is
 * kept, the middle is removed then added. An edit touches one place, so this is what a person reads.
 */
export function diffLines(oldText: string, newText: string): { sign: ' ' | '-' | '+'; text: string }[] {
  const before = oldText === '' ? [] : oldText.replace(/\n$/, '').split('\n');
  const after = newText === '' ? [] : newText.replace(/\n$/, '').split('\n');
  let head = 0;
  while (head < before.length && head < after.length && before[head] === after[head]) head++;
  let tail = 0;
  while (tail < before.length - head && tail < after.length - head && before[before.length - 1 - tail] === after[after.length - 1 - tail]) tail++;
  return [
    ...before.slice(0, head).map((text) => ({ sign: ' ' as const, text })),
    ...before.slice(head, before.length - tail).map((text) => ({ sign: '-' as const, text })),
    ...after.slice(head, after.length - tail).map((text) => ({ sign: '+' as const, text })),
    ...after.slice(after.length - tail).map((text) => ({ sign: ' ' as const, text })),
  ];
}

export function sizeText(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
