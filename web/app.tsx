// The page (PROTOCOL.md §5.5): watches and drives the sessions through the client protocol over
// the edge's WebSocket, like any other front-end. App keeps the connection and the state; each part
// a person sees is a file of its own (the session list, the session pane and its header,
// transcript and composer, the dialogs, the agent chooser), and each carries the roles and names of
// the table, so that people and tests find them the same way. The login form is login.html, which
// the edge serves before there is a session.
import { render } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { AgentChooser, type AgentItem, type Catalogue } from './agent-chooser.js';
import { HostRegion, type HostView } from './host-region.js';
import { QuestionDialog } from './question-dialog.js';
import { useChosenSession } from './chosen-session.js';
import { PageRpc } from './rpc.js';
import { SessionList, type SessionItem } from './session-list.js';
import { SessionPane } from './session-pane.js';
import { historyLines, liveLines } from './transcript.js';
import type { TurnActions } from './transcript-view.js';

interface You {
  user: string;
  admin: boolean;
}

const HOST_POLL_MS = 2000;
const SELECTED_KEY = 'turnhost.session';

function App() {
  const [connected, setConnected] = useState(false);
  const [sessions, setSessions] = useState<SessionItem[]>([]);
  const [selected, setSelected] = useState<string | null>(sessionStorage.getItem(SELECTED_KEY));
  const [showArchived, setShowArchived] = useState(false);
  /** Read by refreshSessions, which the connection's handlers call with the state they were made with. */
  const showArchivedRef = useRef(false);
  const [host, setHost] = useState<HostView | null>(null);
  const [you, setYou] = useState<You | null>(null);
  const [catalogue, setCatalogue] = useState<Catalogue>({ default: '', agents: [] });
  /** The agent chooser of "New session" is open (when there is more than one agent to choose). */
  const [choosing, setChoosing] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const selectedRef = useRef(selected);
  selectedRef.current = selected;
  // The connection's handlers, made once, call the session's functions as the first render made them: they read refs and set state only.
  const session = useChosenSession({ call: (method, params) => rpc.call(method, params), listChanged: () => void refreshSessions(), gone: forget, failed: setError });

  const rpc = useMemo(
    () =>
      new PageRpc({
        open: () => {
          setConnected(true);
          refreshHost();
          void refreshSessions();
          rpc.call<Catalogue>('agents.list').then(setCatalogue, () => {});
          if (selectedRef.current !== null) void session.open(selectedRef.current, true);
        },
        closed: () => setConnected(false),
        event: (event) => session.onEvent(event),
        request: (request) => session.asked(request),
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
    session.close(sid);
    sessionStorage.removeItem(SELECTED_KEY);
    setSelected(null);
    void refreshSessions();
  }

  function choose(sid: string): void {
    sessionStorage.setItem(SELECTED_KEY, sid);
    setSelected(sid);
    void session.open(sid);
  }

  async function act(what: () => Promise<unknown>): Promise<void> {
    await attempt(what);
  }

  /** Runs what a person asked for; a refusal is said (the alert below the session). True when it went through. */
  async function attempt(what: () => Promise<unknown>): Promise<boolean> {
    try {
      setError(null);
      await what();
      return true;
    } catch (err) {
      setError((err as Error).message);
      return false;
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
  const actions = useRef<TurnActions>({ canWrite: false, edit: async () => {}, fork: async () => {}, retry: async () => {}, blobUrl: () => '' });
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
    blobUrl: (blob) => blobUrl(sid ?? '', blob),
  };
  const shown = session.view.current?.sid === sid ? session.view.current : null;
  const live = shown ? [...shown.live.values()] : [];
  const runningTurn = shown?.current ?? null;
  const past = useMemo(() => historyLines(session.history), [session.history]);
  const request = session.requests.find((r) => sid === null || r.params['session_id'] === undefined || r.params['session_id'] === sid) ?? null;

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
        <SessionList
          sessions={sessions}
          selected={sid}
          showArchived={showArchived}
          onShowArchived={(shown) => {
            showArchivedRef.current = shown;
            setShowArchived(shown);
            void refreshSessions();
          }}
          agentLabel={(name) => agentOf(name)?.label ?? name}
          onChoose={choose}
        />
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
            lineage={session.lineage}
            spent={session.spent}
            held={session.held}
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
            queue={session.queue}
            schedules={session.schedules}
            running={runningTurn !== null || shown?.runningAtOpen === true}
            onSend={async (text, steer, content) => {
              let turnId: string | null = null;
              const sent = await attempt(async () => {
                turnId = (await rpc.call<{ turn_id?: string }>('prompt.submit', { session_id: sid, text, ...(content.length === 0 ? {} : { content }), ...(steer ? { on_busy: 'steer' } : {}) })).turn_id ?? null;
              });
              return sent ? { turnId } : null;
            }}
            refused={session.refused}
            upload={(file, progress) => uploadFile(sid, file, progress)}
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
            session.answered(request.id);
          }}
        />
      )}
    </div>
  );
}

/** Where the page reads a file of a session: the edge answers only to whoever may read it. */
function blobUrl(sid: string, blob: string): string {
  return `/v1/sessions/${encodeURIComponent(sid)}/blobs/${encodeURIComponent(blob)}`;
}

/**
 * A file uploaded to the session (PROTOCOL.md §2.4), with the page's login cookie: XMLHttpRequest,
 * for its upload progress, which fetch does not report. A refusal rejects with the edge's message.
 */
function uploadFile(sid: string, file: File, progress: (done: number) => void): Promise<{ blob: string; mimeType: string }> {
  return new Promise((resolve, reject) => {
    const request = new XMLHttpRequest();
    request.open('POST', `/v1/sessions/${encodeURIComponent(sid)}/blobs`);
    request.setRequestHeader('content-type', file.type || 'application/octet-stream');
    request.setRequestHeader('x-filename', encodeURIComponent(file.name || 'pasted'));
    request.upload.onprogress = (e) => progress(e.loaded);
    request.onload = () => {
      const body = JSON.parse(request.responseText || '{}') as { blob?: string; mimeType?: string; error?: { message: string } };
      if (request.status === 201 && body.blob !== undefined) resolve({ blob: body.blob, mimeType: body.mimeType ?? file.type });
      else reject(new Error(body.error?.message ?? `the upload failed (${request.status})`));
    };
    request.onerror = () => reject(new Error('the upload failed: the daemon could not be reached'));
    request.send(file);
  });
}

render(<App />, document.getElementById('app')!);
