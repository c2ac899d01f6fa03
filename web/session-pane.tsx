// The session chosen on the page (PROTOCOL.md §5.5), put together from its parts.
import { Composer, type Refusal, type Sent, type Upload } from './composer.js';
import { QueueList, type QueueItem } from './queue-list.js';
import { ScheduleList, type ScheduleItem } from './schedule-list.js';
import { SessionHeader, type HeaderProps } from './session-header.js';
import type { Line } from './transcript.js';
import { Transcript, type TurnActions } from './transcript-view.js';

export interface SessionPaneProps extends HeaderProps {
  held: string | null;
  actions: { current: TurnActions };
  /** Who is logged in: their own prompts are not labelled. */
  you: string | null;
  lines: Line[];
  queue: QueueItem[];
  schedules: ScheduleItem[];
  running: boolean;
  onSend(text: string, steer: boolean, content: Record<string, unknown>[]): Promise<Sent | null>;
  refused: Refusal | null;
  upload: Upload;
  onStop(): Promise<void>;
  onQueue(queueId: string, action: 'edit' | 'delete', text?: string): Promise<void>;
}

/** The session chosen: its header, its transcript, the prompt box, and what waits (the queue, the schedules). */
export function SessionPane(props: SessionPaneProps) {
  return (
    <>
      <SessionHeader {...props} />
      <Transcript lines={props.lines} you={props.you} actions={props.actions} />
      <Composer running={props.running} upload={props.upload} onSend={props.onSend} refused={props.refused} onStop={props.onStop} />
      {props.held !== null && props.queue.length > 0 && (
        <p class="held" role="status">
          {props.held}
        </p>
      )}
      <QueueList items={props.queue} onQueue={props.onQueue} />
      {props.schedules.length > 0 && <ScheduleList items={props.schedules} />}
    </>
  );
}
