import { expect } from 'chai';
import type { Ref } from '../../actors/runtime.js';
import type { SessionMsg, TurnTicket } from '../../actors/host/messages.js';
import { TurnAdmission } from '../../actors/host/turn-admission.js';

const session = {} as Ref<SessionMsg>;
const ticket = (id: number, sid: string, person = 'ann'): TurnTicket => ({ id, person, sid, session });
const sids = (tickets: readonly TurnTicket[]): string[] => tickets.map((t) => t.sid);

/** `count` turns of `person` asking for a worker, as their sessions would: arrived, then admitted; the sids granted at once. */
function ask(admission: TurnAdmission, person: string, count: number, prefix = person): { ids: number[]; granted: string[] } {
  const ids: number[] = [];
  const granted: string[] = [];
  for (let i = 0; i < count; i++) {
    const arrival = admission.arrive(person);
    ids.push(arrival.id);
    if (arrival.reserved) granted.push(`${prefix}${i}`);
    else granted.push(...sids(admission.admit(ticket(arrival.id, `${prefix}${i}`, person))));
  }
  return { ids, granted };
}

describe('turn admission', () => {
  it('reserves a free worker as a turn.start arrives, and none while others wait or all are busy', () => {
    const admission = new TurnAdmission(1);
    const first = admission.arrive('ann');
    const second = admission.arrive('ann');
    expect(first.reserved).to.equal(true);
    expect(second.reserved).to.equal(false);
    expect(second.id).to.be.greaterThan(first.id);
  });

  it("admits one person's waiting turns in the order their frames arrived, whatever order their sessions ask in", () => {
    const admission = new TurnAdmission(1);
    const running = admission.arrive('ann');
    // Sessions loaded from a database ask when their read answers: not in arrival order.
    const [a, b, c] = [admission.arrive('ann'), admission.arrive('ann'), admission.arrive('ann')];
    for (const [t, sid] of [[c, 'c'], [a, 'a'], [b, 'b']] as const) expect(admission.admit(ticket(t.id, sid))).to.deep.equal([]);
    const order = [...sids(admission.release(running.id)), ...sids(admission.release(a.id)), ...sids(admission.release(b.id))];
    expect(order).to.deep.equal(['a', 'b', 'c']);
  });

  it('gives the next worker to the person with the fewest turns running, not to whoever asked first', () => {
    const admission = new TurnAdmission(2);
    const ann = ask(admission, 'ann', 60);
    expect(ann.granted).to.deep.equal(['ann0', 'ann1']);
    const bob = ask(admission, 'bob', 1);
    expect(bob.granted).to.deep.equal([]);
    // The first of ann's turns to end frees a worker: bob has none running, ann has one.
    expect(sids(admission.release(ann.ids[0]!))).to.deep.equal(['bob0']);
    expect(sids(admission.release(ann.ids[1]!))).to.deep.equal(['ann2']);
  });

  it('breaks a tie in running turns by who waited longest', () => {
    const admission = new TurnAdmission(1);
    const first = ask(admission, 'ann', 1);
    const bob = ask(admission, 'bob', 1);
    const cat = ask(admission, 'cat', 1);
    expect([bob.granted, cat.granted]).to.deep.equal([[], []]);
    expect(sids(admission.release(first.ids[0]!))).to.deep.equal(['bob0']);
    expect(sids(admission.release(bob.ids[0]!))).to.deep.equal(['cat0']);
  });

  it('holds a person at --max-running-per-person while others use the free workers', () => {
    const admission = new TurnAdmission(4, 1);
    const ann = ask(admission, 'ann', 3);
    expect(ann.granted).to.deep.equal(['ann0']);
    expect(ask(admission, 'bob', 1).granted).to.deep.equal(['bob0']);
    expect(admission.activeTurns).to.equal(2);
    expect(sids(admission.release(ann.ids[0]!))).to.deep.equal(['ann1']);
  });

  it('starves nobody: a person with none running starts within as many releases as persons wait', () => {
    // Ten persons keep a backlog each; ann's oldest turn must start within 10 releases of her last running turn ending.
    const admission = new TurnAdmission(3);
    const persons = Array.from({ length: 10 }, (_, i) => `p${i}`);
    const running: number[] = [];
    const take = (granted: readonly TurnTicket[]) => running.push(...granted.map((t) => t.id));
    for (const person of persons) {
      for (let i = 0; i < 20; i++) {
        const arrival = admission.arrive(person);
        if (arrival.reserved) running.push(arrival.id);
        else take(admission.admit(ticket(arrival.id, `${person}-${i}`, person)));
      }
    }
    const ann = admission.arrive('ann');
    expect(admission.admit(ticket(ann.id, 'ann', 'ann'))).to.deep.equal([]);
    let releases = 0;
    let started = false;
    while (!started) {
      const granted = admission.release(running.shift()!);
      releases++;
      started = granted.some((t) => t.person === 'ann');
      take(granted);
    }
    expect(releases).to.be.at.most(persons.length + 1);
  });
});
