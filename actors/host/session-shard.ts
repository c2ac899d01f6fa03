// Sessions live under 64 shard actors (hash of sid), so no actor that routes steady traffic has
// more than a few hundred children: nact copies an actor's children map on every message.
import type { HostMsg, SessionDescription, SessionFrame, SessionHandle, SessionMsg, ShardMsg } from './messages.js';
import { actorName, ask, spawnActor, tell, SECOND_MS, type ActorContext, type Ref, type SystemRef } from '../runtime.js';
import { ErrorCodes } from '../../protocol/client-rpc.js';
import { OwnedElsewhere, storageProblem } from '../../persistence/store.js';
import type { HostServices } from './services.js';
import { spawnSession } from './session.js';

export const SHARD_COUNT = 64;

const QUEUE_ERROR_CODES = { not_found: ErrorCodes.sessionNotFound, storage: ErrorCodes.internal } as const;

/** How long a shard waits for each of its sessions to describe itself. */
const DESCRIBE_TIMEOUT_MS = 2 * SECOND_MS;

interface ShardState {
  /** actor name → sid, for the children nact holds. */
  sids: Map<string, string>;
}

/** FNV-1a: cheap, stable, spreads similar sids. */
export function shardIndex(sid: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < sid.length; i++) {
    hash ^= sid.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % SHARD_COUNT;
}

export function spawnShards(system: SystemRef, services: HostServices, host: Ref<HostMsg>): Ref<ShardMsg>[] {
  const log = services.log.child({ actor: 'sessions' });
  const parent = spawnActor<null, never>(system, 'sessions', (state) => state, { log, init: () => null });
  return Array.from({ length: SHARD_COUNT }, (_, i) =>
    spawnActor<ShardState, ShardMsg>(
      parent,
      `shard-${String(i).padStart(2, '0')}`,
      (state, msg, ctx) => handle(state, msg, ctx, services, host),
      { log: log.child({ shard: i }), init: () => ({ sids: new Map() }), onChildCrash: 'stop-child' },
    ),
  );
}

async function handle(
  state: ShardState,
  msg: ShardMsg,
  ctx: ActorContext<ShardMsg>,
  services: HostServices,
  host: Ref<HostMsg>,
): Promise<ShardState> {
  switch (msg.kind) {
    case 'frame': {
      let session = ctx.children.get(actorName(msg.frame.sid)) as Ref<SessionMsg> | undefined;
      try {
        session ??= await activate(state, msg.frame, ctx, services, host);
      } catch (err) {
        // The worker the host reserved for a turn.start that goes no further is free again.
        if (msg.ticket?.reserved) tell(host, { kind: 'release', ticketId: msg.ticket.id });
        if (err instanceof OwnedElsewhere) answerFrame(msg.frame, err.message, { owner: err.owner }, services);
        else answerFrame(msg.frame, `could not read the session: ${storageProblem(err as Error)}`, 'storage', services);
        return state;
      }
      if (session === 'deleted') answerFrame(msg.frame, `session ${msg.frame.sid} was deleted: its id is not used again`, 'deleted', services);
      else if (session === undefined) answerFrame(msg.frame, 'session not found', 'not_found', services);
      else tell(session, msg);
      return state;
    }
    case 'list':
      tell(msg.replyTo, handles(state, ctx));
      return state;
    case 'describe': {
      const descriptions = await Promise.all(
        handles(state, ctx).map((h) =>
          ask(h.ref, (replyTo: Ref<SessionDescription>): SessionMsg => ({ kind: 'describe', replyTo }), DESCRIBE_TIMEOUT_MS).catch(() => ({ sid: h.sid, unresponsive: true })),
        ),
      );
      tell(msg.replyTo, descriptions);
      return state;
    }
  }
}

function handles(state: ShardState, ctx: ActorContext<ShardMsg>): SessionHandle[] {
  const list: SessionHandle[] = [];
  for (const [name, ref] of ctx.children) {
    const sid = state.sids.get(name);
    if (sid !== undefined) list.push({ sid, ref: ref as Ref<SessionMsg> });
  }
  return list;
}

/**
 * Brings a session to life: from the database when it is known there, new for a turn.start or a
 * session.create, but never under the id of a deleted one (PROTOCOL.md §2.3).
 */
async function activate(
  state: ShardState,
  frame: SessionFrame,
  ctx: ActorContext<ShardMsg>,
  services: HostServices,
  host: Ref<HostMsg>,
): Promise<Ref<SessionMsg> | undefined | 'deleted'> {
  const stored = await services.store.loadSession(frame.sid);
  const creates = frame.type === 'turn.start' || frame.type === 'session.create';
  if (stored === undefined && (!creates || (await services.store.isDeleted(frame.sid)))) {
    await services.store.release(frame.sid);
    return creates ? 'deleted' : undefined;
  }
  const name = actorName(frame.sid);
  for (const known of state.sids.keys()) if (!ctx.children.has(known)) state.sids.delete(known);
  state.sids.set(name, frame.sid);
  tell(host, { kind: 'session-count', delta: 1 });
  const session = spawnSession(ctx.self, frame.sid, stored, services, host);
  if (stored?.takenOver !== undefined) tell(session, { kind: 'taken-over', takeover: stored.takenOver });
  return session;
}

/**
 * A frame no session can take: the session is unknown (`not_found`), the store could not be read,
 * or another node owns the session (`{owner}`: named in a turn's error, for the daemon's scheduler).
 */
function answerFrame(frame: SessionFrame, message: string, why: 'not_found' | 'storage' | 'deleted' | { owner: string }, services: HostServices): void {
  const { writer } = services;
  const { sid, request_id } = frame;
  const code = typeof why === 'string' ? QUEUE_ERROR_CODES[why === 'deleted' ? 'not_found' : why] : ErrorCodes.sessionBusy;
  switch (frame.type) {
    case 'interrupt':
      writer.write({ type: 'interrupt.ack', sid, request_id, applied: false });
      return;
    case 'respond':
      writer.write({ type: 'respond.error', sid, request_id, message });
      return;
    case 'control':
    case 'reload_mcp':
    case 'session.create':
    case 'session.delete':
      writer.write({ type: 'control.error', sid, request_id, message });
      return;
    case 'queue':
      writer.write({ type: 'queue.error', sid, request_id, message, code });
      return;
    case 'turn.start':
      // Unknown is never the answer: activate() creates a session for a turn.start.
      writer.write({ type: 'turn.error', sid, request_id, message, ...(why === 'deleted' ? { reason: 'invalid' } : typeof why === 'string' ? { reason: 'storage' } : { reason: 'busy', node_id: why.owner }) });
      return;
  }
}
