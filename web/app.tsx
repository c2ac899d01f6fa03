// The page (PROTOCOL.md §5.5): watches and drives the sessions through the client protocol over
// the edge's WebSocket, like any other front-end. Its parts carry the roles and names of the
// table, so that people and tests find them the same way.
import { Component, render } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { markdownHtml } from './markdown.js';
import { PageRpc, type EventMessage, type ServerRequest } from './rpc.js';
import { historyLines, liveLines, newLiveTurn, type HistoryEntry, type Line, type LiveTurn } from './transcript.js';
import type { UsageTotals } from '../protocol/usage.js';

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
  forked_from?: ForkOrigin;
  /** Its agent (AGENT.md §8) and the model chosen for it (null: its agent's own). */
  agent: string;
  model: string | null;
  /** A session's life (PROTOCOL.md §2.3): archived ones are listed only when asked; pinned ones outlive retention. */
  archived: boolean;
  pinned: boolean;
}

/** One agent a session may be made with, as `agents.list` shows it (AGENT.md §8). */
interface AgentItem {
  name: string;
  label: string;
  description: string;
  models?: string[];
}

interface Catalogue {
  default: string;
  agents: AgentItem[];
}

/** Where a session was forked from, and the sessions forked from it (PROTOCOL.md §2.2). */
interface ForkOrigin {
  session_id: string;
  turn_id: string | null;
}

interface Lineage {
  forked_from: ForkOrigin | null;
  forks: ForkOrigin[];
}

/** What a past turn's buttons do (PROTOCOL.md §2.2); read at the click, so a line drawn once acts on the session shown now. */
export interface TurnActions {
  canWrite: boolean;
  edit(turnId: string, text: string, where: 'here' | 'branch'): Promise<void>;
  fork(turnId: string): Promise<void>;
  retry(): Promise<void>;
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
  const [showArchived, setShowArchived] = useState(false);
  /** Read by refreshSessions, which the connection's handlers call with the state they were made with. */
  const showArchivedRef = useRef(false);
  const [history, setHistory] = useState<HistoryEntry[]>([]);
  const [queue, setQueue] = useState<QueueItem[]>([]);
  const [schedules, setSchedules] = useState<ScheduleItem[]>([]);
  const [requests, setRequests] = useState<ServerRequest[]>([]);
  const [host, setHost] = useState<HostView | null>(null);
  const [lineage, setLineage] = useState<Lineage | null>(null);
  const [spent, setSpent] = useState<UsageTotals | null>(null);
  /** Why the session's queue waits (a budget), as the host last said; null while it does not. */
  const [held, setHeld] = useState<string | null>(null);
  const [you, setYou] = useState<You | null>(null);
  const [catalogue, setCatalogue] = useState<Catalogue>({ default: '', agents: [] });
  /** The agent chooser of "New session" is open (when there is more than one agent to choose). */
  const [choosing, setChoosing] = useState(false);
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
          rpc.call<Catalogue>('agents.list').then(setCatalogue, () => {});
          if (selectedRef.current !== null) void openSession(selectedRef.current, true);
        },
        closed: () => setConnected(false),
        event: (event) => onEvent(event),
        request: (request) => setRequests((open) => (open.some((r) => r.id === request.id) ? open : [...open, request])),
      }),
    [],
  );

  async function refreshSessions(): Promise<void> {
    const list = await rpc.call<{ sessions: Omit<SessionItem, 'queued'>[] }>('session.list', { archived: showArchivedRef.current });
    // Pinned first, then the most recently active.
    list.sessions.sort((a, b) => Number(b.pinned) - Number(a.pinned) || b.updated_at.localeCompare(a.updated_at) || a.session_id.localeCompare(b.session_id));
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

  /** The line with every superseded path (folded where it left): nothing is ever lost from the page. */
  async function loadHistory(sid: string): Promise<void> {
    const result = await rpc.call<{ messages: HistoryEntry[] }>('session.history', { session_id: sid, all: true });
    if (view.current?.sid === sid) setHistory(result.messages);
  }

  /** The session's total spend (PROTOCOL.md §5.7); each turn's is on its usage line. */
  async function loadUsage(sid: string): Promise<void> {
    const result = await rpc.call<{ total: UsageTotals }>('session.usage', { session_id: sid });
    if (view.current?.sid === sid) setSpent(result.total);
  }

  async function loadLineage(sid: string): Promise<void> {
    const result = await rpc.call<Lineage>('session.forks', { session_id: sid });
    if (view.current?.sid === sid) setLineage(result);
  }

  /** Resumes the session from its last seen event (a reconnect), or from the oldest kept one. */
  async function openSession(sid: string, reconnect = false): Promise<void> {
    if (!reconnect || view.current?.sid !== sid) {
      view.current = new SessionView(sid);
      setHistory([]);
      setQueue([]);
      setSchedules([]);
      setRequests([]);
      setLineage(null);
      setSpent(null);
      setHeld(null);
    }
    const afterSeq = view.current!.lastSeq;
    try {
      const resumed = await rpc.call<{ running?: boolean }>('session.resume', { session_id: sid, after_seq: afterSeq });
      if (view.current?.sid === sid) view.current.runningAtOpen = resumed.running === true;
      await loadHistory(sid);
      const q = await rpc.call<{ items: QueueItem[] }>('session.queue.get', { session_id: sid });
      setQueue(q.items);
      await loadSchedules(sid);
      await loadLineage(sid);
      await loadUsage(sid);
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
        setHeld(null);
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
        if (p['kind'] === 'budget') setHeld(String(p['text']));
        else turn?.notes.push(p['kind'] === 'length' ? '(cut by the token limit)' : `[${String(p['kind'])}] ${String(p['text'])}`);
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
      case 'session.rewound':
        void loadHistory(current.sid);
        break;
      case 'session.archived':
        void refreshSessions();
        break;
      case 'session.deleted':
        forget(current.sid);
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
    void loadUsage(current.sid);
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

  /** The session is gone (deleted here or by someone else): out of the list, and out of view. */
  function forget(sid: string): void {
    if (view.current?.sid === sid) view.current = null;
    sessionStorage.removeItem(SELECTED_KEY);
    setSelected(null);
    void refreshSessions();
  }

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
  const role = sessions.find((s) => s.session_id === sid)?.role;
  const chosen = sessions.find((s) => s.session_id === sid);
  const agentOf = (name: string): AgentItem | undefined => catalogue.agents.find((a) => a.name === name);
  const makeSession = (agent: string | null) =>
    act(async () => {
      setChoosing(false);
      choose((await rpc.call<{ session_id: string }>('session.create', agent === null ? {} : { agent })).session_id);
      await refreshSessions();
    });
  const actions = useRef<TurnActions>({ canWrite: false, edit: async () => {}, fork: async () => {}, retry: async () => {} });
  actions.current = {
    canWrite: role !== 'viewer',
    edit: (turnId, text, where) =>
      act(async () => {
        if (sid === null) return;
        if (where === 'here') return void (await rpc.call('prompt.edit', { session_id: sid, turn_id: turnId, text }));
        // A new branch: a fork that shares the line through this turn, then this turn's prompt changed there.
        const forked = await rpc.call<{ session_id: string }>('session.fork', { session_id: sid, at_turn_id: turnId });
        choose(forked.session_id);
        await rpc.call('prompt.edit', { session_id: forked.session_id, turn_id: turnId, text });
        await refreshSessions();
      }),
    fork: (turnId) =>
      act(async () => {
        if (sid === null) return;
        const forked = await rpc.call<{ session_id: string }>('session.fork', { session_id: sid, at_turn_id: turnId });
        choose(forked.session_id);
        await refreshSessions();
      }),
    retry: () => act(async () => void (sid !== null && (await rpc.call('session.retry', { session_id: sid })))),
  };
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
        <button type="button" aria-expanded={catalogue.agents.length > 1 ? choosing : undefined} onClick={() => (catalogue.agents.length > 1 ? setChoosing(!choosing) : void makeSession(null))}>
          New session
        </button>
        {choosing && <AgentChooser catalogue={catalogue} onChoose={(agent) => void makeSession(agent)} />}
        <label class="archived-toggle">
          <input
            type="checkbox"
            checked={showArchived}
            onChange={(e) => {
              showArchivedRef.current = (e.target as HTMLInputElement).checked;
              setShowArchived(showArchivedRef.current);
              void refreshSessions();
            }}
          />
          Archived too
        </label>
        <ul aria-label="Sessions">
          {sessions.map((s) => (
            <li key={s.session_id} aria-current={s.session_id === sid ? 'true' : undefined}>
              <button type="button" onClick={() => choose(s.session_id)}>
                <span class="title">
                  {s.pinned && <span aria-label="pinned">📌 </span>}
                  {s.title ?? s.session_id}
                  {s.archived && <em> (archived)</em>}
                </span>
                <small>
                  {s.session_id} · {agentOf(s.agent)?.label ?? s.agent}
                  {s.model !== null ? ` (${s.model})` : ''} · {s.status} · {s.running ? 'running' : 'idle'} · {s.queued} queued
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
            title={chosen?.title ?? null}
            agent={chosen === undefined ? null : { name: chosen.agent, label: agentOf(chosen.agent)?.label ?? chosen.agent, model: chosen.model, models: agentOf(chosen.agent)?.models ?? [] }}
            onModel={(model) => act(async () => {
              await rpc.call('slash.model', { session_id: sid, model });
              await refreshSessions();
            })}
            lineage={lineage}
            spent={spent}
            held={held}
            titleOf={(other) => sessions.find((s) => s.session_id === other)?.title ?? other}
            onOpen={choose}
            actions={actions}
            you={you?.user ?? null}
            canShare={role === 'owner' || role === 'admin'}
            life={chosen === undefined ? null : { archived: chosen.archived, pinned: chosen.pinned, canMark: role !== 'viewer', canDelete: role === 'owner' || role === 'admin' }}
            onMark={(mark) => act(async () => {
              await rpc.call(`session.${mark}`, { session_id: sid });
              await refreshSessions();
            })}
            onDelete={() => act(async () => {
              if (!window.confirm(`Delete this session, its history and its agent's files? This cannot be undone.`)) return;
              await rpc.call('session.delete', { session_id: sid });
              forget(sid);
            })}
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

/**
 * "New session" with several agents (AGENT.md §8): each with its label and what it is for, the
 * default chosen; Create makes the session with the one chosen.
 */
function AgentChooser({ catalogue, onChoose }: { catalogue: Catalogue; onChoose(agent: string): void }) {
  const [agent, setAgent] = useState(catalogue.default);
  return (
    <form
      class="agent-chooser"
      aria-label="Agent of the new session"
      onSubmit={(e) => {
        e.preventDefault();
        onChoose(agent);
      }}
    >
      <fieldset>
        <legend>Agent</legend>
        {catalogue.agents.map((a) => (
          <div key={a.name} class="choice">
            <label>
              <input type="radio" name="agent" value={a.name} checked={a.name === agent} onChange={() => setAgent(a.name)} aria-describedby={`agent-${a.name}`} />
              <span>{a.label}</span>
            </label>
            {a.description !== '' && <small id={`agent-${a.name}`}>{a.description}</small>}
          </div>
        ))}
      </fieldset>
      <button type="submit" class="primary">
        Create
      </button>
    </form>
  );
}

interface SessionLife {
  archived: boolean;
  pinned: boolean;
  /** An owner, an editor or an admin pins and archives; an owner or an admin deletes. */
  canMark: boolean;
  canDelete: boolean;
}

/** A session's life in its header: pin, archive, export (a file of JSON lines), delete (asked first). */
function LifeBar({ sid, life, onMark, onDelete }: { sid: string; life: SessionLife; onMark(mark: 'pin' | 'unpin' | 'archive' | 'unarchive'): Promise<void>; onDelete(): Promise<void> }) {
  return (
    <p class="life">
      {life.canMark && (
        <>
          <button type="button" class="quiet" aria-pressed={life.pinned} onClick={() => void onMark(life.pinned ? 'unpin' : 'pin')}>
            {life.pinned ? 'Unpin' : 'Pin'}
          </button>
          <button type="button" class="quiet" onClick={() => void onMark(life.archived ? 'unarchive' : 'archive')}>
            {life.archived ? 'Unarchive' : 'Archive'}
          </button>
        </>
      )}
      <a class="quiet" href={`/v1/sessions/${encodeURIComponent(sid)}/export`} download={`${sid}.jsonl`}>
        Export
      </a>
      {life.canDelete && (
        <button type="button" class="quiet danger" onClick={() => void onDelete()}>
          Delete
        </button>
      )}
    </p>
  );
}

/** A session's agent and model in its header; an agent with models offers them (`slash.model`). */
function AgentLine({ agent, onModel }: { agent: { label: string; model: string | null; models: string[] }; onModel(model: string): Promise<void> }) {
  return (
    <p class="agent">
      {agent.label}
      {agent.models.length > 1 ? (
        <select aria-label="Model" value={agent.model ?? agent.models[0]} onChange={(e) => void onModel((e.target as HTMLSelectElement).value)}>
          {agent.models.map((model) => (
            <option key={model} value={model}>
              {model}
            </option>
          ))}
        </select>
      ) : (
        (agent.model ?? agent.models[0]) !== undefined && <span> · {agent.model ?? agent.models[0]}</span>
      )}
    </p>
  );
}

interface SessionPaneProps {
  sid: string;
  /** Its first prompt's first line; null before it has one (then the id names it). */
  title: string | null;
  /** Its agent (AGENT.md §8), shown in its header with its model, and the models it may pick from. */
  agent: { name: string; label: string; model: string | null; models: string[] } | null;
  onModel(model: string): Promise<void>;
  lineage: Lineage | null;
  spent: UsageTotals | null;
  held: string | null;
  titleOf(sid: string): string;
  onOpen(sid: string): void;
  actions: { current: TurnActions };
  /** Who is logged in: their own prompts are not labelled. */
  you: string | null;
  canShare: boolean;
  onShare(user: string, role: 'viewer' | 'editor'): Promise<void>;
  /** Pin, archive, export and delete (PROTOCOL.md §2.3), as the person may. */
  life: SessionLife | null;
  onMark(mark: 'pin' | 'unpin' | 'archive' | 'unarchive'): Promise<void>;
  onDelete(): Promise<void>;
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
      <div class="session-head">
        <h2>{props.title ?? props.sid}</h2>
        {props.title !== null && <small class="sid">{props.sid}</small>}
        {props.agent !== null && <AgentLine agent={props.agent} onModel={props.onModel} />}
        <LineageLinks lineage={props.lineage} titleOf={props.titleOf} onOpen={props.onOpen} />
        {props.spent !== null && props.spent.turns > 0 && <p class="spent">{spentText(props.spent)}</p>}
        {props.canShare && <ShareForm onShare={props.onShare} />}
        {props.life !== null && <LifeBar sid={props.sid} life={props.life} onMark={props.onMark} onDelete={props.onDelete} />}
      </div>
      <div role="log" aria-label="Transcript" class="transcript" ref={log} onClick={copyCode}>
        {props.lines.map((line) => (
          <TranscriptLine key={line.key} line={line.by === props.you ? { ...line, by: undefined } : line} actions={props.actions} />
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
        <button type="button" class="primary" onClick={() => send(false)}>Send</button>
        <button type="button" onClick={() => send(true)}>Steer</button>
        <button type="button" disabled={!props.running} onClick={() => void props.onStop()}>Stop</button>
      </div>
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
              <div dangerouslySetInnerHTML={{ __html: markdownHtml(line.text) }} />
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

/** "Forked from" one way, "Forks" the other (PROTOCOL.md §2.2), each a link to that session. */
/** A session's total spend, on one line under its title. */
function spentText(total: UsageTotals): string {
  const turns = `${total.turns} turn${total.turns === 1 ? '' : 's'}`;
  return `Spent: ${(total.prompt_tokens + total.completion_tokens).toLocaleString('en')} tokens (${total.prompt_tokens.toLocaleString('en')} prompt, ${total.completion_tokens.toLocaleString('en')} completion) in ${turns}`;
}

function LineageLinks({ lineage, titleOf, onOpen }: { lineage: Lineage | null; titleOf(sid: string): string; onOpen(sid: string): void }) {
  if (lineage === null || (lineage.forked_from === null && lineage.forks.length === 0)) return null;
  const link = (sid: string) => (
    <a
      href={`#${encodeURIComponent(sid)}`}
      onClick={(e) => {
        e.preventDefault();
        onOpen(sid);
      }}
    >
      {titleOf(sid)}
    </a>
  );
  return (
    <p class="lineage">
      {lineage.forked_from !== null && <span>Forked from {link(lineage.forked_from.session_id)}</span>}
      {lineage.forks.length > 0 && (
        <span>
          Forks:{' '}
          {lineage.forks.map((fork, i) => (
            <span key={fork.session_id}>
              {i > 0 && ', '}
              {link(fork.session_id)}
            </span>
          ))}
        </span>
      )}
    </p>
  );
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
