import { expect } from 'chai';
import type { Ref } from '../../actors/runtime.js';
import type { SessionMsg, TurnTicket } from '../../actors/host/messages.js';
import { TurnAdmission } from '../../actors/host/turn-admission.js';

const session = {} as Ref<SessionMsg>;
const ticket = (id: number, sid: string): TurnTicket => ({ id, sid, session });

describe('turn admission', () => {
  it('reserves a free worker as a turn.start arrives, and none while others wait or all are busy', () => {
    const admission = new TurnAdmission(1);
    const first = admission.arrive();
    const second = admission.arrive();
    expect(first.reserved).to.equal(true);
    expect(second.reserved).to.equal(false);
    expect(second.id).to.be.greaterThan(first.id);
  });

  it('admits the waiting in the order their frames arrived, whatever order their sessions ask in', () => {
    const admission = new TurnAdmission(1);
    const running = admission.arrive();
    // Sessions loaded from a database ask when their read answers: not in arrival order.
    const [a, b, c] = [admission.arrive(), admission.arrive(), admission.arrive()];
    for (const [t, sid] of [[c, 'c'], [a, 'a'], [b, 'b']] as const) expect(admission.admit(ticket(t.id, sid))).to.equal(undefined);
    const order = [admission.release(running.id)!.sid];
    order.push(admission.release(a.id)!.sid);
    order.push(admission.release(b.id)!.sid);
    expect(order).to.deep.equal(['a', 'b', 'c']);
  });
});
