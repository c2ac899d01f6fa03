// Where a person writes to the session (PROTOCOL.md §2.1): send, steer, stop.
import { useState } from 'preact/hooks';

/** The prompt box: Enter sends (Shift+Enter is a new line), Steer sends into the running turn, Stop stops it. */
export function Composer({ running, onSend, onStop }: { running: boolean; onSend(text: string, steer: boolean): Promise<void>; onStop(): Promise<void> }) {
  const [text, setText] = useState('');
  const send = (steer: boolean): void => {
    if (text.trim() === '') return;
    const sent = text;
    setText('');
    void onSend(sent, steer);
  };
  return (
    <div class="writing">
      <textarea
        aria-label="Prompt"
        value={text}
        rows={2}
        onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
        onKeyDown={(e) => {
          if (e.key === 'Enter' && !e.shiftKey) {
            e.preventDefault();
            send(false);
          }
        }}
      />
      <button type="button" class="primary" onClick={() => send(false)}>Send</button>
      <button type="button" onClick={() => send(true)}>Steer</button>
      <button type="button" disabled={!running} onClick={() => void onStop()}>Stop</button>
    </div>
  );
}
