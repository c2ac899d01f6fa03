// What the page keeps of the session chosen (PROTOCOL.md §5.5): its stored history, its queue,
// schedules, lineage and spend, the questions open to the person, and what streamed of its turns
// since it was opened, resumed from the last event seen after a reconnect. App holds the
// connection and says which session; this keeps that session's state and applies its events.
import { useRef, useState } from 'preact/hooks';
import type { MessagePart } from '../protocol/message-parts.js';
import type { UsageTotals } from '../protocol/usage.js';
import type { QueueItem } from './queue-list.js';
import type { EventMessage, ServerRequest } from './rpc.js';
import type { ScheduleItem } from './schedule-list.js';
import type { Lineage } from './session-header.js';
import { newLiveTurn, type HistoryEntry, type LiveTurn } from './transcript.js';

/** What the page keeps of the chosen session between renders; events update it in place. */
export class SessionView {
  lastSeq = 0;
  live = new Map<string, LiveTurn>();
  current: LiveTurn | null = null;
  /** A turn was running when the page (re)opened the session: Stop stops it, whatever its id. */
  runningAtOpen = false;

  constructor(readonly sid: string) {}
}

/** What the chosen session needs from the page around it. */
export interface AroundSession {
  call<T>(method: string, params?: Record<string, unknown>): Promise<T>;
  /** Something the session list shows changed (a turn started or ended, an archive). */
  listChanged(): void;
  /** The session was deleted, here or by someone else. */
  gone(sid: string): void;
  failed(message: string): void;
}

export function useChosenSession(around: AroundSession) {
  const call = <T>(method: string, params?: Record<string, unknown>) => around.call<T>(method, params);
  const [history, setHistory] = useState<HistoryEntry[]>([]);
  const [queue, setQueue] = useState<QueueItem[]>([]);
  const [schedules, setSchedules] = useState<ScheduleItem[]>([]);
  const [requests, setRequests] = useState<ServerRequest[]>([]);
  const [lineage, setLineage] = useState<Lineage | null>(null);
  const [spent, setSpent] = useState<UsageTotals | null>(null);
  /** Why the session's queue waits (a budget), as the host last said; null while it does not. */
  const [held, setHeld] = useState<string | null>(null);
  /** A turn the agent refused as it started (reason `invalid`: files it cannot take), and why. */
  const [refused, setRefused] = useState<{ turnId: string; message: string } | null>(null);
  const [, setTick] = useState(0);
  const view = useRef<SessionView | null>(null);
  // One render per frame, however many events arrived in it: a fast stream costs frames, not events.
  const frame = useRef<number | null>(null);
  const redraw = () => {
    if (frame.current !== null) return;
    frame.current = requestAnimationFrame(() => {
      frame.current = null;
      setTick((n) => n + 1);
    });
  };

  async function loadSchedules(sid: string): Promise<void> {
    const result = await call<{ schedules: ScheduleItem[] }>('schedule.list', { session_id: sid });
    if (view.current?.sid === sid) setSchedules(result.schedules);
  }

  /** The line with every superseded path (folded where it left): nothing is ever lost from the page. */
  async function loadHistory(sid: string): Promise<void> {
    const result = await call<{ messages: HistoryEntry[] }>('session.history', { session_id: sid, all: true });
    if (view.current?.sid === sid) setHistory(result.messages);
  }

  /** The session's total spend (PROTOCOL.md §5.7); each turn's is on its usage line. */
  async function loadUsage(sid: string): Promise<void> {
    const result = await call<{ total: UsageTotals }>('session.usage', { session_id: sid });
    if (view.current?.sid === sid) setSpent(result.total);
  }

  async function loadLineage(sid: string): Promise<void> {
    const result = await call<Lineage>('session.forks', { session_id: sid });
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
      const resumed = await call<{ running?: boolean }>('session.resume', { session_id: sid, after_seq: afterSeq });
      if (view.current?.sid === sid) view.current.runningAtOpen = resumed.running === true;
      await loadHistory(sid);
      const q = await call<{ items: QueueItem[] }>('session.queue.get', { session_id: sid });
      setQueue(q.items);
      await loadSchedules(sid);
      await loadLineage(sid);
      await loadUsage(sid);
    } catch (err) {
      around.failed((err as Error).message);
    }
  }

  function onEvent(event: EventMessage): void {
    const current = view.current;
    if (event.type === 'turn.end' || event.type === 'turn.error' || event.type === 'turn.started') around.listChanged();
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
        if (tool && Array.isArray(p['content'])) tool.parts = p['content'] as MessagePart[];
        break;
      }
      case 'tool.update': {
        const tool = turn?.tools.find((t) => t.id === String(p['id']));
        if (tool && Array.isArray(p['content'])) tool.parts = p['content'] as MessagePart[];
        break;
      }
      case 'status.update':
        if (p['kind'] === 'budget') setHeld(String(p['text']));
        else turn?.notes.push(p['kind'] === 'length' ? '(cut by the token limit)' : `[${String(p['kind'])}] ${String(p['text'])}`);
        break;
      case 'turn.end':
      case 'turn.error':
        if (event.type === 'turn.error' && p['reason'] === 'invalid') setRefused({ turnId: String(p['turn_id']), message: String(p['message']) });
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
        around.listChanged();
        break;
      case 'session.deleted':
        around.gone(current.sid);
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

  /** The session is out of view: its events are no longer applied. */
  function close(sid: string): void {
    if (view.current?.sid === sid) view.current = null;
  }

  /** A question the daemon asked this person, once however often it is sent. */
  function asked(request: ServerRequest): void {
    setRequests((open) => (open.some((r) => r.id === request.id) ? open : [...open, request]));
  }

  function answered(requestId: string): void {
    setRequests((open) => open.filter((r) => r.id !== requestId));
  }

  return { view, history, queue, schedules, requests, lineage, spent, held, refused, open: openSession, close, onEvent, asked, answered };
}
