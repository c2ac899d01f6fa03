import { expect } from 'chai';
import { MUTATOR_ROUTE_TABLE, parseControl, routeClass } from '../../actors/host/routes.js';
import type { ControlFrame } from '../../protocol/frames.js';

const control = (route_name: string, extra: Partial<ControlFrame> = {}): ControlFrame => ({
  type: 'control',
  sid: 's',
  request_id: 'r',
  route_name,
  ...extra,
});

describe('routes', () => {
  it('has exactly the 13 routes of DESIGN.md, each with its class (the seed test)', () => {
    expect(MUTATOR_ROUTE_TABLE).to.deep.equal({
      'prompt.submit': 'turn-path',
      'session.interrupt': 'turn-path',
      'reload.mcp': 'run-concurrent',
      'session.save': 'run-concurrent',
      'session.compress': 'idle-gated',
      'prompt.submit.truncate': 'idle-gated',
      'slash.model': 'idle-gated',
      'slash.personality': 'idle-gated',
      'slash.prompt': 'idle-gated',
      'slash.compress': 'idle-gated',
      'session.reset': 'idle-gated',
      'session.history.reload': 'idle-gated',
      'slash.retry': 'idle-gated',
    });
    expect(Object.isFrozen(MUTATOR_ROUTE_TABLE)).to.equal(true);
  });

  it('classifies only table routes, not inherited names', () => {
    expect(routeClass('slash.model')).to.equal('idle-gated');
    expect(routeClass('toString')).to.equal(undefined);
    expect(routeClass('slash.refine')).to.equal(undefined);
  });

  it('refuses unclassified and turn-path routes with a clear message', () => {
    expect(parseControl(control('slash.refine'))).to.deep.equal({ ok: false, message: 'unclassified route: slash.refine' });
    const turnPath = parseControl(control('prompt.submit'));
    expect(turnPath.ok).to.equal(false);
    expect(turnPath.ok === false && turnPath.message).to.match(/turn-path: send turn\.start/);
  });

  it('reads route params, or the slash command when params are absent', () => {
    expect(parseControl(control('slash.model', { params: { model: 'm2' } }))).to.deep.equal({
      ok: true,
      request: { route: 'slash.model', model: 'm2' },
      idleGated: true,
    });
    expect(parseControl(control('slash.model', { command: '/model  big-one ' }))).to.deep.include({ ok: true });
    expect(parseControl(control('slash.model', { command: '/model big-one' }))).to.deep.equal({
      ok: true,
      request: { route: 'slash.model', model: 'big-one' },
      idleGated: true,
    });
    expect(parseControl(control('slash.compress', { command: '/compress the plan' }))).to.deep.equal({
      ok: true,
      request: { route: 'slash.compress', focusTopic: 'the plan' },
      idleGated: true,
    });
    expect(parseControl(control('session.save'))).to.deep.equal({ ok: true, request: { route: 'session.save' }, idleGated: false });
    expect(parseControl(control('prompt.submit.truncate', { params: { keep: 2 } }))).to.deep.equal({
      ok: true,
      request: { route: 'prompt.submit.truncate', keep: 2 },
      idleGated: true,
    });
  });

  it('names the missing or mistyped parameter', () => {
    expect(parseControl(control('slash.model', { params: {} }))).to.deep.equal({ ok: false, message: 'model required' });
    expect(parseControl(control('prompt.submit.truncate', { params: { keep: -1 } }))).to.deep.equal({
      ok: false,
      message: 'keep must be an integer >= 0',
    });
    expect(parseControl(control('slash.prompt', { command: '/prompt' }))).to.deep.equal({ ok: false, message: 'prompt required' });
  });
});
