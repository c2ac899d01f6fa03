// The transcript on the page: its lines as transcript.ts makes them, each drawn once and again only
// when it changes, with a past turn's buttons (PROTOCOL.md §2.2).
import { Component } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import { markdownHtml } from './markdown.js';
import { Parts, type BlobUrl } from './message-parts.js';
import type { Line } from './transcript.js';

/** What a past turn's buttons do (PROTOCOL.md §2.2); read at the click, so a line drawn once acts on the session shown now. */
export interface TurnActions {
  canWrite: boolean;
  edit(turnId: string, text: string, where: 'here' | 'branch'): Promise<void>;
  fork(turnId: string): Promise<void>;
  retry(): Promise<void>;
  /** Where a file of the open session is read (PROTOCOL.md §2.4). */
  blobUrl: BlobUrl;
}

/** The transcript: every line, kept scrolled to its end as lines come; a code block's Copy button works here. */
export function Transcript({ lines, you, actions }: { lines: Line[]; you: string | null; actions: { current: TurnActions } }) {
  const log = useRef<HTMLDivElement>(null);
  useEffect(() => {
    log.current?.scrollTo({ top: log.current.scrollHeight });
  }, [lines.length, lines.at(-1)?.text]);
  return (
    <div role="log" aria-label="Transcript" class="transcript" ref={log} onClick={copyCode}>
      {lines.map((line) => (
        <TranscriptLine key={line.key} line={line.by === you ? { ...line, by: undefined } : line} actions={actions} />
      ))}
    </div>
  );
}

interface LineProps {
  line: Line;
  actions: { current: TurnActions };
}

interface LineState {
  open: boolean;
  /** The draft of an edit of this prompt; null when not editing. */
  draft: string | null;
}

/**
 * One line of the transcript, drawn again only when its text changes (or it is opened, closed or
 * edited): a past turn's lines are drawn once, and a fragment redraws the one block it lands in. A
 * prompt and a reply are Markdown (markdown.ts makes it safe), under who wrote them; a past prompt
 * can be edited (here, or in a new branch), a turn's reply forked from, the last one retried
 * (PROTOCOL.md §2.2); a tool call, reasoning and a superseded stretch are disclosures.
 */
class TranscriptLine extends Component<LineProps, LineState> {
  override state: LineState = { open: false, draft: null };

  override shouldComponentUpdate(next: LineProps, nextState: LineState): boolean {
    const { line } = this.props;
    return (
      next.line.text !== line.text ||
      next.line.kind !== line.kind ||
      next.line.by !== line.by ||
      next.line.ends !== line.ends ||
      next.line.turnId !== line.turnId ||
      next.line.lead !== line.lead ||
      next.line.parts !== line.parts ||
      next.line.tool?.parts !== line.tool?.parts ||
      nextState.open !== this.state.open ||
      nextState.draft !== this.state.draft
    );
  }

  override render() {
    const { line, actions } = this.props;
    const { open, draft } = this.state;
    const toggle = () => this.setState({ open: !open });
    const act = actions.current;
    switch (line.kind) {
      case 'prompt':
        return (
          <div class="prompt" data-turn={line.turnId}>
            <div class="who">
              <span class={line.by === undefined ? 'role' : 'role by'}>{line.by ?? 'You'}</span>
              {line.at !== undefined && <time dateTime={line.at}>{shortTime(line.at)}</time>}
              {line.turnId !== undefined && act.canWrite && draft === null && (
                <button type="button" class="quiet" onClick={() => this.setState({ draft: line.text })}>
                  Edit
                </button>
              )}
            </div>
            {draft === null ? (
              <>
                <div dangerouslySetInnerHTML={{ __html: markdownHtml(line.text) }} />
                {line.parts !== undefined && <Parts parts={line.parts} blobUrl={act.blobUrl} />}
              </>
            ) : (
              <form class="edit" aria-label="Edit prompt" onSubmit={(e) => e.preventDefault()}>
                <textarea aria-label="Edited prompt" value={draft} rows={3} onInput={(e) => this.setState({ draft: (e.target as HTMLTextAreaElement).value })} />
                <div class="row">
                  <button type="button" class="primary" onClick={() => this.finishEdit('here')}>
                    Save here
                  </button>
                  <button type="button" onClick={() => this.finishEdit('branch')}>
                    Save in a new branch
                  </button>
                  <button type="button" class="quiet" onClick={() => this.setState({ draft: null })}>
                    Cancel
                  </button>
                </div>
              </form>
            )}
          </div>
        );
      case 'reply':
        return (
          <div class="reply-line">
            {line.lead === true && (
              <div class="who">
                <span class="role">Assistant</span>
              </div>
            )}
            <div class="reply" dangerouslySetInnerHTML={{ __html: markdownHtml(line.text) }} />
            {line.ends !== undefined && line.turnId !== undefined && (
              <div class="turn-actions">
                <button type="button" class="quiet" onClick={() => void act.fork(line.turnId!)}>
                  Fork
                </button>
                {line.ends === 'last' && act.canWrite && (
                  <button type="button" class="quiet" onClick={() => void act.retry()}>
                    Retry
                  </button>
                )}
              </div>
            )}
          </div>
        );
      case 'tool':
        return (
          <div class="tool">
            <button type="button" class="quiet" aria-expanded={open} onClick={toggle}>
              {line.tool!.name}
            </button>{' '}
            <span class="state">{line.tool!.state}</span>
            {open && <pre class="detail">{line.tool!.detail}</pre>}
            {line.tool!.parts !== undefined && <Parts parts={line.tool!.parts} blobUrl={act.blobUrl} />}
          </div>
        );
      case 'reasoning':
        return (
          <div class="reasoning">
            <button type="button" class="quiet" aria-expanded={open} onClick={toggle}>
              Reasoning
            </button>
            {open && <p>{line.text}</p>}
          </div>
        );
      case 'superseded':
        return (
          <div class="superseded">
            <button type="button" class="quiet" aria-expanded={open} onClick={toggle}>
              {line.text}
            </button>
            {open && (
              <div class="folded">
                {line.folded!.map((inner) => (
                  <TranscriptLine key={inner.key} line={{ ...inner, ends: undefined }} actions={{ current: { ...act, canWrite: false } }} />
                ))}
              </div>
            )}
          </div>
        );
      default:
        return <p class={line.kind}>{line.text}</p>;
    }
  }

  private finishEdit(where: 'here' | 'branch'): void {
    const { draft } = this.state;
    const turnId = this.props.line.turnId;
    if (draft === null || draft.trim() === '' || turnId === undefined) return;
    this.setState({ draft: null });
    void this.props.actions.current.edit(turnId, draft, where);
  }
}

/** A prompt's time: the hour and minute, and the day when it is not today. */
function shortTime(iso: string): string {
  const at = new Date(iso);
  const time = at.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  return at.toDateString() === new Date().toDateString() ? time : `${at.toLocaleDateString()} ${time}`;
}

/** A fenced code block's Copy button copies the code beside it. */
function copyCode(event: MouseEvent): void {
  const button = (event.target as Element).closest('button.copy');
  const code = button?.parentElement?.querySelector('code')?.textContent;
  if (button && code !== undefined && code !== null) {
    void navigator.clipboard.writeText(code).then(() => (button.textContent = 'Copied'));
  }
}
