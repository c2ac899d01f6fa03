// A session deleted by its session actor (PROTOCOL.md §2.3): refused while a turn runs unless the
// delete interrupts it (the turn ends, the queue is cleared, then the delete goes on); then one
// commit (persistence/session-life.ts), the session's clients and webhooks told `session.deleted`,
// the actor stopped, and the files removed after the commit: the agent's own (its guest's home,
// the workspace turnhost made for it, never a folder a person named), then the tombstone marked.
// A crash between the commit and the files leaves the tombstone marked pending: the next host's
// start removes them.
import { OWNER } from '../../persistence/people.js';
import type { Tombstone } from '../../persistence/session-life.js';
import { storageProblem } from '../../persistence/store.js';
import type { SessionDeleteFrame } from '../../protocol/frames.js';
import { stopPoint } from '../../persistence/stop-points.js';
import { rpcEvent } from '../../protocol/rpc.js';
import { stopActor } from '../runtime.js';
import type { HostServices } from './services.js';
import { historyMeta, type SessionState } from './session-state.js';
import { ackDrainWaiters, stopTurn, type SessionEnv } from './session-turn.js';

const STOP_AFTER_DELETE = stopPoint('session-delete-committed');

export async function deleteSession(s: SessionState, frame: SessionDeleteFrame, env: SessionEnv): Promise<void> {
  const { writer, store, log, webhookEvents } = env.services;
  if (s.activity.phase !== 'idle') {
    if (frame.interrupt !== true) {
      writer.write({ type: 'control.error', sid: s.sid, request_id: frame.request_id, message: 'session busy' });
      return;
    }
    // The turn ends first (its turn.end still written), and nothing queued starts after it: the
    // delete goes on when it has ended (session.ts, turn-done), and takes the queue's rows with it.
    s.deleting = frame;
    stopTurn(s, env);
    // A turn that only waited for a worker ends at once; a running one when its agent returns.
    if ((s.activity as SessionState['activity']).phase !== 'idle') return;
  }
  s.deleting = null;
  const whose = await store.sessionWorkspace(s.sid);
  const by = frame.by ?? OWNER;
  try {
    await store.commitNow((w) => {
      w.deleteSession(s.sid, by);
      if (webhookEvents.has('session.deleted')) w.queueWebhook(s.sid, 'session.deleted', s.sid, by);
    });
  } catch (err) {
    log.error({ err, sid: s.sid }, 'could not delete the session');
    writer.write({ type: 'control.error', sid: s.sid, request_id: frame.request_id, message: `could not delete the session: ${storageProblem(err as Error)}` });
    return;
  }
  STOP_AFTER_DELETE?.();
  store.history.forget(s.sid);
  await store.release(s.sid);
  writer.write({ type: 'rpc', sid: s.sid, message: rpcEvent(s.sid, 'session.deleted', { session_id: s.sid, by }) });
  writer.write({ type: 'control.ack', sid: s.sid, request_id: frame.request_id, route_name: 'session.delete', result: { deleted: true }, ...historyMeta(s) });
  ackDrainWaiters(s);
  stopActor(env.self);
  const tombstone: Tombstone = { sid: s.sid, deleted_at: Date.now(), agent: s.agentName, owner: whose.owner, cwd: s.cwd, flat_workspace: whose.flat };
  void removeDeletedFiles(tombstone, env.services);
}

/** The files of a deleted session, then its tombstone marked done; a failure is logged, and tried again at the next start. */
export async function removeDeletedFiles(tombstone: Tombstone, services: HostServices): Promise<void> {
  const { agents, store, log } = services;
  try {
    const agent = await agents.agent(tombstone.agent ?? agents.defaultName);
    await agent.forget?.(tombstone.sid, { cwd: tombstone.cwd, person: tombstone.owner ?? OWNER, flat: tombstone.flat_workspace });
    await store.finishDelete(tombstone.sid);
    log.info({ name: 'session-files-removed', sid: tombstone.sid }, "a deleted session's files are removed");
  } catch (err) {
    log.warn({ err, sid: tombstone.sid }, "a deleted session's files could not be removed: the next start tries again");
  }
}
