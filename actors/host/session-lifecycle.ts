// The end of a session's run in this process: finalized (its one-shot latch spent) or retained
// for recovery (latch unspent). Each gives the rows for the shutdown's one flush transaction.
import type { Work } from '../../persistence/store.js';
import type { RetainReason } from '../../protocol/outbound.js';
import { rpcEvent } from '../../protocol/rpc.js';
import type { Settled } from './messages.js';
import { tell } from '../runtime.js';
import type { HostServices } from './services.js';
import type { SessionState } from './session-state.js';

/** Spends the latch: the first call gives the finalize rows, any later one is `skipped`. Only for an idle session. */
export function finalize(s: SessionState, endReason: string, answering: Settled['answering']): Settled {
  const { sid } = s;
  if (s.lifecycle === 'finalized') return { kind: 'settled', answering, sid, outcome: 'skipped', work: null };
  s.lifecycle = 'finalized';
  const stored = s.row !== 'none';
  return { kind: 'settled', answering, sid, outcome: 'finalized', work: stored ? (w) => w.finalizeSession(sid, endReason) : null };
}

/**
 * A laggard at the drain deadline: its partial tail is written and its open requests are
 * cancelled (reason `shutdown`, one request.cancel each), all in the flush transaction; the
 * latch stays unspent. The turn is aborted, and its late end writes nothing.
 */
export function retain(s: SessionState, reason: RetainReason, services: HostServices): Settled {
  const { sid } = s;
  if (s.lifecycle === 'finalized') return { kind: 'settled', answering: 'retain', sid, outcome: 'skipped', work: null };
  s.lifecycle = 'retained';
  const stored = s.row !== 'none';
  const requestIds = [...s.requests.keys()];
  for (const request of s.requests.values()) {
    services.writer.write({ type: 'rpc', sid, message: rpcEvent(sid, 'request.cancel', { id: request.id, method: request.method, reason: 'shutdown' }) });
    tell(request.ref, { kind: 'cancel', reason: 'shutdown', recorded: true });
  }
  const turn = s.activity.phase === 'running' ? s.activity.turn : undefined;
  const tail = turn ? turn.pending.splice(0) : [];
  const firstSeq = s.messageCount;
  s.messageCount += tail.length;
  turn?.controller.abort();
  turn?.span?.end({ outcome: 'interrupted', ...turn.report, error: { type: 'shutting_down', message: `the shutdown retained the session (${reason})` } });
  const work: Work = (w) => {
    for (const id of requestIds) w.closeRequest(id, 'cancelled', null, 'shutdown');
    if (turn) {
      w.appendMessages(sid, firstSeq, tail, turn.turnId);
      w.endTurn(turn.turnId, 'interrupted', reason, turn.report);
    }
    if (stored) w.retainSession(sid, reason);
  };
  return { kind: 'settled', answering: 'retain', sid, outcome: 'retained', work };
}
