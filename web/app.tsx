// The page (PROTOCOL.md §5.5): watches and drives the sessions through the client protocol over
// the edge's WebSocket, like any other front-end. Its parts carry the roles and names of the
// table, so that people and tests find them the same way.
import { Component, render } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { markdownHtml } from './markdown.js';
import { PageRpc, type EventMessage, type ServerRequest } from './rpc.js';
import { historyLines, liveLines, newLiveTurn, type HistoryEntry, type Line, type LiveTurn } from './transcript.js';

interface SessionItem {
  session_id: string;
  status: string;
  running: boolean;
  queued: number;
  /** Its first prompt's first line; null before it has one. */
  title: string | null;
  updated_at: string;
  /** What the person logged in is to it (PROTOCOL.md §5.6): an owner or an admin may share it. */
  role: 'owner' | 'editor' | 'viewer' | 'admin';
}

interface You {
  user: string;
  admin: boolean;
}

interface QueueItem {
  queue_id: string;
  text: string;
}

interface HostView {
  state: string;
  pid: number | null;
  restarts: number;
  last_hb_ms: number | null;
}

const HOST_POLL_MS = 2000;
const SELECTED_KEY = 'turnhost.session';

/** What the page keeps of the chosen session between renders; events update it in place. */
class SessionView {
  lastSeq = 0;
  live = new Map<string, LiveTurn>();
  current: LiveTurn | null = null;
  /** A turn was running when the page (re)opened the session: Stop stops it, whatever its id. */
  runningAtOpen = false;

  constructor(readonly sid: string) {}
}

function App() {
  const [connected, setConnected] = useState(false);
  const [sessions, setSessions] = useState<SessionItem[]>([]);
  const [selected, setSelected] = useState<string | null>(sessionStorage.getItem(SELECTED_KEY));
  const [history, setHistory] = useState<HistoryEntry[]>([]);
  const [queue, setQueue] = useState<QueueItem[]>([]);
  const [schedules, setSchedules] = useState<ScheduleItem[]>([]);
  const [requests, setRequests] = useState<ServerRequest[]>([]);
  const [host, setHost] = useState<HostView | null>(null);
  const [you, setYou] = useState<You | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [, setTick] = useState(0);
  const view = useRef<SessionView | null>(null);
  const selectedRef = useRef(selected);
  selectedRef.current = selected;
  // One render per frame, however many events arrived in it: a fast stream costs frames, not events.
  const frame = useRef<number | null>(null);
  const redraw = () => {
    if (frame.current !== null) return;
    frame.current = requestAnimationFrame(() => {
      frame.current = null;
      setTick((n) => n + 1);
    });
  };

  const rpc = useMemo(
    () =>
      new PageRpc({
        open: () => {
          setConnected(true);
          refreshHost();
          void refreshSessions();
          if (selectedRef.current !== null) void openSession(selectedRef.current, true);
        },
        closed: () => setConnected(false),
        event: (event) => onEvent(event),
        request: (request) => setRequests((open) => (open.some((r) => r.id === request.id) ? open : [...open, request])),
      }),
    [],
  );

  async function refreshSessions(): Promise<void> {
    const list = await rpc.call<{ sessions: Omit<SessionItem, 'queued'>[] }>('session.list');
    // Most recently active first.
    list.sessions.sort((a, b) => b.updated_at.localeCompare(a.updated_at) || a.session_id.localeCompare(b.session_id));
    const withQueues = await Promise.all(
      list.sessions.map(async (s) => {
        const q = await rpc.call<{ items: unknown[] }>('session.queue.get', { session_id: s.session_id }).catch(() => ({ items: [] }));
        return { ...s, queued: q.items.length };
      }),
    );
    setSessions(withQueues);
  }

  async function loadSchedules(sid: string): Promise<void> {
    const result = await rpc.call<{ schedules: ScheduleItem[] }>('schedule.list', { session_id: sid });
    if (view.current?.sid === sid) setSchedules(result.schedules);
  }

  async function loadHistory(sid: string): Promise<void> {
    const result = await rpc.call<{ messages: HistoryEntry[] }>('session.history', { session_id: sid });
    if (view.current?.sid === sid) setHistory(result.messages);
  }

  /** Resumes the session from its last seen event (a reconnect), or from the oldest kept one. */
  async function openSession(sid: string, reconnect = false): Promise<void> {
    if (!reconnect || view.current?.sid !== sid) {
      view.current = new SessionView(sid);
      setHistory([]);
      setQueue([]);
      setSchedules([]);
      setRequests([]);
    }
    const afterSeq = view.current!.lastSeq;
    try {
      const resumed = await rpc.call<{ running?: boolean }>('session.resume', { session_id: sid, after_seq: afterSeq });
      if (view.current?.sid === sid) view.current.runningAtOpen = resumed.running === true;
      await loadHistory(sid);
      const q = await rpc.call<{ items: QueueItem[] }>('session.queue.get', { session_id: sid });
      setQueue(q.items);
      await loadSchedules(sid);
    } catch (err) {
      setError((err as Error).message);
    }
  }

  function onEvent(event: EventMessage): void {
    const current = view.current;
    if (event.type === 'turn.end' || event.type === 'turn.error' || event.type === 'turn.started') void refreshSessions();
    if (current === null || event.session_id !== current.sid) return;
    if (event.seq <= current.lastSeq) return; // seen before a reconnect
    current.lastSeq = event.seq;
    const p = event.payload;
    const turn = current.current;
    switch (event.type) {
      case 'turn.started': {
        const started = newLiveTurn(String(p['turn_id']));
        current.live.set(started.turnId, started);
        current.current = started;
        void loadHistory(current.sid);
        if (typeof p['schedule_id'] === 'string') void loadSchedules(current.sid);
        break;
      }
      case 'message.delta':
        turn?.reply.push(String(p['text'] ?? ''));
        break;
      case 'reasoning.delta':
        if (turn) turn.reasoning += String(p['text'] ?? '');
        break;
      case 'tool.start':
        turn?.tools.push({ id: String(p['id']), name: String(p['name']), args: String(p['arguments'] ?? '') });
        break;
      case 'tool.complete': {
        const tool = turn?.tools.find((t) => t.id === String(p['id']));
        if (tool) tool.outcome = { ok: p['ok'] === true, summary: String(p['summary'] ?? '') };
        break;
      }
      case 'status.update':
        turn?.notes.push(p['kind'] === 'length' ? '(cut by the token limit)' : `[${String(p['kind'])}] ${String(p['text'])}`);
        break;
      case 'turn.end':
      case 'turn.error':
        endTurn(current, String(p['turn_id']), p, event.type === 'turn.error');
        break;
      case 'session.queue':
        setQueue(Array.isArray(p['items']) ? (p['items'] as QueueItem[]) : []);
        break;
      case 'request.cancel':
        setRequests((open) => open.filter((r) => r.id !== String(p['id'])));
        break;
      case 'request.open': {
        // Sent to a viewer, who may not answer: the turn waits on someone who may.
        const asked = (p['params'] as Record<string, unknown> | undefined)?.['question'];
        turn?.notes.push(`waiting for an answer${typeof asked === 'string' ? `: ${asked}` : ''}`);
        break;
      }
    }
    redraw();
  }

  function endTurn(current: SessionView, turnId: string, p: Record<string, unknown>, failed: boolean): void {
    const turn = current.live.get(turnId);
    if (turn) {
      turn.ended = true;
      turn.durationMs = Date.now() - turn.startedAt;
      if (failed) turn.notes.push(`turn failed: ${String(p['message'])} (${String(p['reason'])})`);
      if (p['interrupted'] === true) turn.notes.push('(interrupted)');
      if (p['usage']) turn.usage = p['usage'] as LiveTurn['usage'];
    }
    if (current.current?.turnId === turnId) current.current = null;
    current.runningAtOpen = false;
    setRequests((open) => open.filter((r) => r.params['session_id'] !== current.sid));
    void loadHistory(current.sid);
  }

  function refreshHost(): void {
    rpc.call<{ host: HostView; you: You }>('host.status').then((s) => {
      setHost(s.host);
      setYou(s.you);
    }, () => {});
  }

  useEffect(() => {
    const poll = window.setInterval(() => {
      if (rpc.connected) refreshHost();
    }, HOST_POLL_MS);
    return () => window.clearInterval(poll);
  }, []);

  function choose(sid: string): void {
    sessionStorage.setItem(SELECTED_KEY, sid);
    setSelected(sid);
    void openSession(sid);
  }

  async function act(what: () => Promise<unknown>): Promise<void> {
    try {
      setError(null);
      await what();
    } catch (err) {
      setError((err as Error).message);
    }
  }

  const sid = selected;
  const shown = view.current?.sid === sid ? view.current : null;
  const live = shown ? [...shown.live.values()] : [];
  const runningTurn = shown?.current ?? null;
  const past = useMemo(() => historyLines(history), [history]);
  const request = requests.find((r) => sid === null || r.params['session_id'] === undefined || r.params['session_id'] === sid) ?? null;

  return (
    <div class="page">
      <header>
        <h1>turnhost</h1>
        {you !== null && <p class="you">Signed in as {you.user}{you.admin ? ' (admin)' : ''}</p>}
        {!connected && <p role="status">reconnecting…</p>}
      </header>
      <nav>
        <button
          type="button"
          onClick={() =>
            void act(async () => {
              choose((await rpc.call<{ session_id: string }>('session.create')).session_id);
              await refreshSessions();
            })
          }
        >
          New session
        </button>
        <ul aria-label="Sessions">
          {sessions.map((s) => (
            <li key={s.session_id} aria-current={s.session_id === sid ? 'true' : undefined}>
              <button type="button" onClick={() => choose(s.session_id)}>
                <span class="title">{s.title ?? s.session_id}</span>
                <small>
                  {s.session_id} · {s.status} · {s.running ? 'running' : 'idle'} · {s.queued} queued
                </small>
              </button>
            </li>
          ))}
        </ul>
        <HostRegion host={host} />
      </nav>
      <main>
        {sid === null ? (
          <p>Choose a session, or make a new one.</p>
        ) : (
          <SessionPane
            sid={sid}
            you={you?.user ?? null}
            canShare={sessions.find((s) => s.session_id === sid)?.role === 'owner' || sessions.find((s) => s.session_id === sid)?.role === 'admin'}
            onShare={(user, role) => act(() => rpc.call('session.share', { session_id: sid, user, role }))}
            lines={[...past.lines, ...liveLines(live, past.replied)]}
            queue={queue}
            schedules={schedules}
            running={runningTurn !== null || shown?.runningAtOpen === true}
            onSend={(text, steer) => act(() => rpc.call('prompt.submit', { session_id: sid, text, ...(steer ? { on_busy: 'steer' } : {}) }))}
            onStop={() => act(() => rpc.call('session.interrupt', { session_id: sid, ...(runningTurn ? { turn_id: runningTurn.turnId } : {}) }))}
            onQueue={(queueId, action, text) => act(() => rpc.call('session.queue.update', { session_id: sid, queue_id: queueId, action, ...(text === undefined ? {} : { text }) }))}
          />
        )}
        {error !== null && <p role="alert">{error}</p>}
      </main>
      {request !== null && (
        <QuestionDialog
          key={request.id}
          request={request}
          onAnswer={(result) => {
            rpc.answer(request.id, result);
            setRequests((open) => open.filter((r) => r.id !== request.id));
          }}
        />
      )}
    </div>
  );
}

function HostRegion({ host }: { host: HostView | null }) {
  return (
    <section role="region" aria-label="Host">
      <h2>Host</h2>
      {host === null ? (
        <p>…</p>
      ) : (
        <dl>
          <dt>state</dt>
          <dd>{host.state}</dd>
          <dt>pid</dt>
          <dd>{host.pid ?? '–'}</dd>
          <dt>restarts</dt>
          <dd>{host.restarts}</dd>
          <dt>heartbeat</dt>
          <dd>{host.last_hb_ms === null ? '–' : `${(host.last_hb_ms / 1000).toFixed(1)} s ago`}</dd>
        </dl>
      )}
    </section>
  );
}

interface SessionPaneProps {
  sid: string;
  /** Who is logged in: their own prompts are not labelled. */
  you: string | null;
  canShare: boolean;
  onShare(user: string, role: 'viewer' | 'editor'): Promise<void>;
  lines: Line[];
  queue: QueueItem[];
  schedules: ScheduleItem[];
  running: boolean;
  onSend(text: string, steer: boolean): Promise<void>;
  onStop(): Promise<void>;
  onQueue(queueId: string, action: 'edit' | 'delete', text?: string): Promise<void>;
}

function SessionPane(props: SessionPaneProps) {
  const [text, setText] = useState('');
  const log = useRef<HTMLDivElement>(null);
  useEffect(() => {
    log.current?.scrollTo({ top: log.current.scrollHeight });
  }, [props.lines.length, props.lines.at(-1)?.text]);
  const send = (steer: boolean): void => {
    if (text.trim() === '') return;
    const sent = text;
    setText('');
    void props.onSend(sent, steer);
  };
  return (
    <>
      <h2>{props.sid}</h2>
      {props.canShare && <ShareForm onShare={props.onShare} />}
      <div role="log" aria-label="Transcript" class="transcript" ref={log} onClick={copyCode}>
        {props.lines.map((line) => (
          <TranscriptLine key={line.key} line={line.by === props.you ? { ...line, by: undefined } : line} />
        ))}
      </div>
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
        <button type="button" onClick={() => send(false)}>Send</button>
        <button type="button" onClick={() => send(true)}>Steer</button>
        <button type="button" disabled={!props.running} onClick={() => void props.onStop()}>Stop</button>
      </div>
      <QueueList items={props.queue} onQueue={props.onQueue} />
      {props.schedules.length > 0 && <ScheduleList items={props.schedules} />}
    </>
  );
}

/**
 * One line of the transcript, drawn again only when its text changes (or it is opened or closed):
 * a past turn's lines are drawn once, and a fragment redraws the one block it lands in. A prompt
 * and a reply are Markdown (markdown.ts makes it safe); a tool call and reasoning are disclosures;
 * the rest is text.
 */
class TranscriptLine extends Component<{ line: Line }, { open: boolean }> {
  override state = { open: false };

  override shouldComponentUpdate(next: { line: Line }, nextState: { open: boolean }): boolean {
    const { line } = this.props;
    return next.line.text !== line.text || next.line.kind !== line.kind || next.line.by !== line.by || nextState.open !== this.state.open;
  }

  override render() {
    const { line } = this.props;
    const open = this.state.open;
    const toggle = () => this.setState({ open: !open });
    switch (line.kind) {
      case 'prompt':
        return (
          <div class="prompt">
            {line.by !== undefined && <small class="by">{line.by}</small>}
            <div dangerouslySetInnerHTML={{ __html: markdownHtml(line.text) }} />
          </div>
        );
      case 'reply':
        return <div class={line.kind} dangerouslySetInnerHTML={{ __html: markdownHtml(line.text) }} />;
      case 'tool':
        return (
          <div class="tool">
            <button type="button" aria-expanded={open} onClick={toggle}>
              {line.tool!.name}
            </button>{' '}
            <span class="state">{line.tool!.state}</span>
            {open && <pre class="detail">{line.tool!.detail}</pre>}
          </div>
        );
      case 'reasoning':
        return (
          <div class="reasoning">
            <button type="button" aria-expanded={open} onClick={toggle}>
              Reasoning
            </button>
            {open && <p>{line.text}</p>}
          </div>
        );
      default:
        return <p class={line.kind}>{line.text}</p>;
    }
  }
}

/** A fenced code block's Copy button copies the code beside it. */
function copyCode(event: MouseEvent): void {
  const button = (event.target as Element).closest('button.copy');
  const code = button?.parentElement?.querySelector('code')?.textContent;
  if (button && code !== undefined && code !== null) {
    void navigator.clipboard.writeText(code).then(() => (button.textContent = 'Copied'));
  }
}

/** The owner's (or an admin's) "Share": a user's name and what they may do. */
function ShareForm({ onShare }: { onShare: SessionPaneProps['onShare'] }) {
  const [open, setOpen] = useState(false);
  const [user, setUser] = useState('');
  const [role, setRole] = useState<'viewer' | 'editor'>('viewer');
  if (!open) {
    return (
      <button type="button" onClick={() => setOpen(true)}>
        Share
      </button>
    );
  }
  return (
    <form
      aria-label="Share"
      class="share"
      onSubmit={(e) => {
        e.preventDefault();
        if (user.trim() !== '') void onShare(user.trim(), role).then(() => setOpen(false));
      }}
    >
      <input aria-label="User" value={user} onInput={(e) => setUser((e.target as HTMLInputElement).value)} />
      <select aria-label="Role" value={role} onChange={(e) => setRole((e.target as HTMLSelectElement).value as 'viewer' | 'editor')}>
        <option value="viewer">viewer</option>
        <option value="editor">editor</option>
      </select>
      <button type="submit">Share</button>
    </form>
  );
}

function QueueList({ items, onQueue }: { items: QueueItem[]; onQueue: SessionPaneProps['onQueue'] }) {
  const [editing, setEditing] = useState<{ id: string; text: string } | null>(null);
  return (
    <section>
      <h3>Queue</h3>
      <ul aria-label="Queue">
        {items.map((item) => (
          <li key={item.queue_id}>
            {editing?.id === item.queue_id ? (
              <>
                <input aria-label="Queued text" value={editing.text} onInput={(e) => setEditing({ id: item.queue_id, text: (e.target as HTMLInputElement).value })} />
                <button type="button" onClick={() => void onQueue(item.queue_id, 'edit', editing.text).then(() => setEditing(null))}>Save</button>
              </>
            ) : (
              <>
                <span>{item.text}</span>
                <button type="button" onClick={() => setEditing({ id: item.queue_id, text: item.text })}>Edit</button>
              </>
            )}
            <button type="button" onClick={() => void onQueue(item.queue_id, 'delete')}>Delete</button>
          </li>
        ))}
      </ul>
    </section>
  );
}

interface ScheduleItem {
  schedule_id: string;
  text: string;
  cron?: string;
  every_secs?: number;
  at?: string;
  tz: string;
  next_at: string | null;
  fires: number;
}

/** The session's schedules (PROTOCOL.md §8.1): what runs by itself, and when next. */
function ScheduleList({ items }: { items: ScheduleItem[] }) {
  const plan = (s: ScheduleItem): string => (s.cron !== undefined ? `cron ${s.cron} (${s.tz})` : s.every_secs !== undefined ? `every ${s.every_secs} s` : `at ${s.at ?? ''}`);
  return (
    <section>
      <h3>Schedules</h3>
      <ul aria-label="Schedules">
        {items.map((s) => (
          <li key={s.schedule_id}>
            <span>{s.text}</span> <small>{plan(s)} · next {s.next_at === null ? 'none' : new Date(s.next_at).toLocaleString()} · {s.fires} fired</small>
          </li>
        ))}
      </ul>
    </section>
  );
}

interface Question {
  id: string;
  question: string;
  choices?: string[];
}

/** A clarify (one question, or a batch asked in order) or an approval, as a dialog named by its question. */
function QuestionDialog({ request, onAnswer }: { request: ServerRequest; onAnswer(result: unknown): void }) {
  const [answers, setAnswers] = useState<Record<string, string>>({});
  const [text, setText] = useState('');
  const p = request.params;
  if (request.method === 'approval.request') {
    const question = String(p['question']);
    return (
      <div role="dialog" aria-label={question} class="dialog">
        <p>Approve {question}?</p>
        <button type="button" onClick={() => onAnswer({ approved: true })}>Approve</button>
        <button type="button" onClick={() => onAnswer({ approved: false })}>Deny</button>
      </div>
    );
  }
  const batch = Array.isArray(p['questions']) ? (p['questions'] as Question[]) : null;
  const asked: Question = batch ? batch[Object.keys(answers).length]! : { id: '', question: String(p['question']), ...(Array.isArray(p['choices']) ? { choices: p['choices'] as string[] } : {}) };
  const give = (answer: string): void => {
    setText('');
    if (batch === null) return onAnswer({ answer });
    const next = { ...answers, [asked.id]: answer };
    if (Object.keys(next).length === batch.length) onAnswer({ answers: next });
    else setAnswers(next);
  };
  return (
    <div role="dialog" aria-label={asked.question} class="dialog">
      <p>{asked.question}</p>
      {(asked.choices ?? []).map((choice) => (
        <button type="button" key={choice} onClick={() => give(choice)}>
          {choice}
        </button>
      ))}
      <input aria-label="Answer" value={text} onInput={(e) => setText((e.target as HTMLInputElement).value)} onKeyDown={(e) => e.key === 'Enter' && give(text)} />
      <button type="button" onClick={() => give(text)}>Answer</button>
    </div>
  );
}

render(<App />, document.getElementById('app')!);
