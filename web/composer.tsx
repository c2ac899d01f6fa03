// Where a person writes to the session (PROTOCOL.md §2.1, §2.4): send, steer, stop, and files to
// send with the prompt: chosen with Attach, pasted, or dropped on the prompt. Each is uploaded as it
// is added (its progress shown), listed with a thumbnail or its name and size, and can be removed
// before sending. A prompt the daemon refuses stays, with its files, and the refusal is said; so does
// one the agent refuses as its turn starts (an image to an agent that takes none).
import { useEffect, useRef, useState } from 'preact/hooks';
import { sizeText } from './message-parts.js';

/** A file on its way into the prompt: uploading (`done` of `size` bytes), stored (`blob`), or refused. */
export interface Attachment {
  id: number;
  name: string;
  mimeType: string;
  size: number;
  done: number;
  blob?: string;
  failed?: string;
  /** An image's thumbnail (an object URL, revoked when it is removed or sent). */
  preview?: string;
}

export type Upload = (file: File, progress: (done: number) => void) => Promise<{ blob: string; mimeType: string }>;

/** A prompt the daemon took: the turn it made (null for a steer into the running one). */
export interface Sent {
  turnId: string | null;
}

/** A turn the agent refused as it started (files it cannot take), and why. */
export interface Refusal {
  turnId: string;
  message: string;
}

let nextAttachment = 0;

/** The prompt box: Enter sends (Shift+Enter is a new line), Steer sends into the running turn, Stop stops it. */
export function Composer({
  running,
  upload,
  onSend,
  refused,
  onStop,
}: {
  running: boolean;
  upload: Upload;
  /** Null: refused at once (the page says why); else the turn it made, which may yet be refused as it starts. */
  onSend(text: string, steer: boolean, content: Record<string, unknown>[]): Promise<Sent | null>;
  refused: Refusal | null;
  onStop(): Promise<void>;
}) {
  const [text, setText] = useState('');
  const [files, setFiles] = useState<Attachment[]>([]);
  /** What was last sent, kept until its turn is known not to be refused: a refusal brings it back. */
  const lastSent = useRef<{ turnId: string; text: string; files: Attachment[] } | null>(null);
  const [refusal, setRefusal] = useState<string | null>(null);
  useEffect(() => {
    const sent = lastSent.current;
    if (refused === null || sent === null || refused.turnId !== sent.turnId) return;
    lastSent.current = null;
    setText((now) => (now === '' ? sent.text : now));
    setFiles((now) => (now.length === 0 ? sent.files : now));
    setRefusal(refused.message);
  }, [refused]);
  const change = (id: number, to: Partial<Attachment>) => setFiles((all) => all.map((f) => (f.id === id ? { ...f, ...to } : f)));
  const add = (list: Iterable<File>): void => {
    for (const file of list) {
      const item: Attachment = { id: ++nextAttachment, name: file.name || 'pasted', mimeType: file.type || 'application/octet-stream', size: file.size, done: 0, ...(file.type.startsWith('image/') ? { preview: URL.createObjectURL(file) } : {}) };
      setFiles((all) => [...all, item]);
      upload(file, (done) => change(item.id, { done })).then(
        (stored) => change(item.id, { blob: stored.blob, mimeType: stored.mimeType, done: item.size }),
        (err: Error) => change(item.id, { failed: err.message }),
      );
    }
  };
  const remove = (item: Attachment): void => {
    if (item.preview !== undefined) URL.revokeObjectURL(item.preview);
    setFiles((all) => all.filter((f) => f.id !== item.id));
  };
  const ready = files.every((f) => f.blob !== undefined);
  const send = async (steer: boolean): Promise<void> => {
    if ((text.trim() === '' && files.length === 0) || !ready) return;
    const content = files.map((f) => ({ type: f.mimeType.startsWith('image/') ? 'image' : 'resource_link', mimeType: f.mimeType, blob: f.blob, name: f.name }));
    const sent = await onSend(text, steer, content);
    if (sent === null) return;
    setRefusal(null);
    // The previews stay for the copy a refusal of the agent would bring back.
    for (const f of lastSent.current?.files ?? []) if (f.preview !== undefined && !files.includes(f)) URL.revokeObjectURL(f.preview);
    lastSent.current = sent.turnId === null ? null : { turnId: sent.turnId, text, files };
    setText('');
    setFiles([]);
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
            void send(false);
          }
        }}
        onPaste={(e) => {
          const pasted = [...(e.clipboardData?.files ?? [])];
          if (pasted.length === 0) return;
          e.preventDefault();
          add(pasted);
        }}
        onDragOver={(e) => e.preventDefault()}
        onDrop={(e) => {
          e.preventDefault();
          add(e.dataTransfer?.files ?? []);
        }}
      />
      <label class="button">
        Attach
        <input
          type="file"
          multiple
          class="hidden-input"
          onChange={(e) => {
            const input = e.target as HTMLInputElement;
            add(input.files ?? []);
            input.value = '';
          }}
        />
      </label>
      <button type="button" class="primary" disabled={!ready} onClick={() => void send(false)}>Send</button>
      <button type="button" disabled={!ready} onClick={() => void send(true)}>Steer</button>
      <button type="button" disabled={!running} onClick={() => void onStop()}>Stop</button>
      {refusal !== null && <p role="alert" class="refusal">{refusal}</p>}
      {files.length > 0 && (
        <ul aria-label="Attachments" class="attachments">
          {files.map((f) => (
            <li key={f.id}>
              {f.preview !== undefined ? <img src={f.preview} alt={f.name} /> : <span>{f.name}</span>}
              <span class="size">{sizeText(f.size)}</span>
              {f.failed !== undefined ? (
                <span role="alert">{f.failed}</span>
              ) : (
                f.blob === undefined && <progress max={f.size} value={f.done} aria-label={`Uploading ${f.name}`} />
              )}
              <button type="button" class="quiet" onClick={() => remove(f)}>
                Remove
              </button>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
