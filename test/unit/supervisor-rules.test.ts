import { expect } from 'chai';
import { PendingControls } from '../../actors/daemon/pending-controls.js';
import { afterCrash, RESTART_WINDOW_MS } from '../../actors/daemon/restart-policy.js';

describe('restart policy', () => {
  it('backs off 0.25 s doubling and stops after 3 restarts in 300 s', () => {
    let restarts: number[] = [];
    const delays: number[] = [];
    for (const at of [1_000, 2_000, 3_000]) {
      const d = afterCrash(restarts, at);
      expect(d.respawn).to.equal(true);
      if (d.respawn) delays.push(d.delayMs);
      restarts = d.restarts;
    }
    expect(delays).to.deep.equal([250, 500, 1000]);
    expect(afterCrash(restarts, 4_000).respawn).to.equal(false);
  });

  it('forgets restarts older than the window, and caps the backoff at 5 s', () => {
    const old = [0, 1_000, 2_000];
    const later = afterCrash(old, RESTART_WINDOW_MS + 2_001);
    expect(later).to.deep.include({ respawn: true, delayMs: 250 });
    const capped = afterCrash([], 0);
    expect(capped.respawn && capped.delayMs).to.equal(250);
  });
});

describe('pending controls', () => {
  let now = 0;
  const registry = () => new PendingControls<string>(() => now, 1_800_000, 64);

  it('gives an ack to its waiter, and to nobody twice', () => {
    const p = registry();
    p.wait('r1', 'waiter-1');
    expect(p.settle('r1')).to.deep.equal({ to: 'waiter', entry: 'waiter-1' });
    expect(p.settle('r1')).to.equal(null);
    expect(p.expire('r1')).to.equal(null);
  });

  it('hands an ack that comes after the timeout to the late handler, exactly once', () => {
    const p = registry();
    p.wait('r1', 'waiter-1');
    expect(p.expire('r1')).to.equal('waiter-1');
    expect(p.settle('r1')).to.deep.equal({ to: 'late', entry: 'waiter-1' });
    expect(p.settle('r1')).to.equal(null);
  });

  it('keeps late handlers 1800 s and at most 64, evicting the oldest', () => {
    const p = registry();
    now = 0;
    p.wait('old', 'old');
    p.expire('old');
    now = 1_800_001;
    p.wait('new', 'new');
    p.expire('new');
    expect(p.settle('old')).to.equal(null);
    for (let i = 0; i < 70; i++) {
      p.wait(`r${i}`, `e${i}`);
      p.expire(`r${i}`);
    }
    expect(p.lateSize).to.equal(64);
    expect(p.settle('r0')).to.equal(null);
    expect(p.settle('r69')).to.deep.equal({ to: 'late', entry: 'e69' });
  });

  it('hands every waiter and late handler over once when the host is gone', () => {
    const p = registry();
    p.wait('a', 'a');
    p.wait('b', 'b');
    p.expire('b');
    expect(p.failAll()).to.deep.equal({ waiting: ['a'], late: ['b'] });
    expect(p.failAll()).to.deep.equal({ waiting: [], late: [] });
  });
});
