import { expect } from 'chai';
import { Harness, type Frame, type HostProcess } from '../helpers/processes.js';

const turn = (sid: string, request_id: string, text: string, extra: object = {}) => ({ type: 'turn.start', sid, request_id, text, ...extra });

describe('host: hello, heartbeat and turns', () => {
  const h = new Harness();
  afterEach(() => h.cleanup());

  it('says hello first, with every field of PROTOCOL.md §1.2', async () => {
    const home = h.tempDir();
    const host = await h.startHost(home, [], { TURNHOST_WORKERS: '3' });
    const hello = host.frames[0]!;
    expect(hello.type).to.equal('hello');
    expect(hello).to.include({ host_pid: host.pid, protocol: 1, workers: 3, heartbeat_secs: 5 });
    expect(hello['boot_id']).to.match(/^[0-9a-f]{32}$/);
    expect(hello['build_sha']).to.be.a('string').and.not.equal('');
    expect(hello['cwd']).to.be.a('string');
    expect(hello['home']).to.be.a('string').and.include('turnhost-test-');
    expect(hello['recovered']).to.deep.equal([]);
    expect(hello['host_ns']).to.be.a('number');
  });

  it('beats every heartbeat period with its counters, and stamps host_ns on every frame', async () => {
    const host = await h.startHost(h.tempDir(), ['--heartbeat-secs', '0.2']);
    host.send(turn('s1', 'r1', 'hi'));
    await host.next('turn.end');
    const first = await host.next('hb', { where: (f) => f['progress_counter'] === 1 });
    const second = await host.next('hb');
    expect(first).to.include({ active_turns: 0, queued_turns: 0, sessions: 1, progress_counter: 1 });
    expect(first['rss_mb']).to.be.a('number').greaterThan(0);
    expect(first['loop_lag_ms']).to.be.a('number').at.least(0);
    const gapMs = (Number(second['host_ns']) - Number(first['host_ns'])) / 1e6;
    expect(gapMs).to.be.within(150, 1000);
    for (const f of host.frames) expect(f['host_ns'], f.type).to.be.a('number');
  });

  it('runs a turn: turn.started, the agent events, message.complete, then turn.end with the history meta', async () => {
    const host = await h.startHost(h.tempDir());
    host.send(turn('s1', 'r1', 'hello world'));
    const started = await host.next('turn.started');
    const end = await host.next('turn.end');
    expect(started).to.include({ sid: 's1', request_id: 'r1' });
    expect(end).to.include({ sid: 's1', request_id: 'r1', session_key: 's1', message_count: 2, interrupted: false, session_info_emitted: true });
    expect(end['history_version']).to.be.a('number').greaterThan(0);
    expect(end['session_info']).to.include({ agent: 'script' });
    expect(Number(end['ended_ns'])).to.be.greaterThan(Number(started['started_ns']));
    const events = host.all('rpc').map((f) => (f['message'] as { params: { type: string; payload: { text: string } } }).params);
    expect(events.map((e) => e.type)).to.deep.equal(['message.delta', 'message.delta', 'message.complete']);
    expect(events[2]!.payload.text).to.equal('hello world');
    const order = host.frames.map((f) => f.type).filter((t) => t.startsWith('turn.') || t === 'rpc');
    expect(order).to.deep.equal(['turn.started', 'rpc', 'rpc', 'rpc', 'turn.end']);
  });

  it('refuses a turn.start without a sid, and a second one on a busy session', async () => {
    const host = await h.startHost(h.tempDir());
    host.send({ type: 'turn.start', request_id: 'no-sid', text: 'x' });
    expect(await host.next('turn.error')).to.include({ request_id: 'no-sid', message: 'sid required', reason: 'invalid' });
    host.send(turn('s1', 'r1', '/sleep 30'));
    await host.next('turn.started');
    host.send(turn('s1', 'r2', 'again'));
    expect(await host.next('turn.error')).to.include({ sid: 's1', request_id: 'r2', message: 'session busy', reason: 'busy' });
  });

  it('turns an agent exception into turn.error and leaves the session idle', async () => {
    const host = await h.startHost(h.tempDir());
    host.send(turn('s1', 'r1', 'partial\n/fail the model went away'));
    expect(await host.next('turn.error')).to.include({ sid: 's1', request_id: 'r1', message: 'the model went away', reason: 'exception' });
    host.send(turn('s1', 'r2', 'still here'));
    expect(await host.next('turn.end')).to.include({ request_id: 'r2', interrupted: false });
  });

  it('interrupts /sleep 30: the ack, then turn.end interrupted, both within 1 s, and the generation moves on', async () => {
    const host = await h.startHost(h.tempDir());
    host.send(turn('s1', 'r1', 'working\n/sleep 30'));
    await host.next('turn.started');
    const sentAt = performance.now();
    host.send({ type: 'interrupt', sid: 's1', request_id: 'i1' });
    const ack = await host.next('interrupt.ack', { timeoutMs: 1000 });
    const end = await host.next('turn.end', { timeoutMs: 1000 });
    expect(performance.now() - sentAt).to.be.lessThan(1000);
    expect(ack).to.include({ sid: 's1', request_id: 'i1', applied: true });
    expect(ack['applied_ns']).to.be.a('number');
    expect(end).to.include({ request_id: 'r1', interrupted: true });
    expect(host.frames.indexOf(ack)).to.be.lessThan(host.frames.indexOf(end));
    // The interrupt bumped the generation from 0 to 1: a prompt queued under 0 is stale.
    host.send(turn('s1', 'stale', 'queued before the interrupt', { queued_prompt_generation: 0 }));
    const stale = await host.next('turn.end', { where: (f) => f['request_id'] === 'stale' });
    expect(stale).to.include({ interrupted: true });
    expect(stale).to.not.have.property('message_count');
    host.send(turn('s1', 'fresh', 'queued after it', { queued_prompt_generation: 1 }));
    expect(await host.next('turn.end', { where: (f) => f['request_id'] === 'fresh' })).to.include({ interrupted: false });
  });

  it('acks an interrupt of an unknown session as not applied', async () => {
    const host = await h.startHost(h.tempDir());
    host.send({ type: 'interrupt', sid: 'nobody', request_id: 'i1' });
    expect(await host.next('interrupt.ack')).to.include({ sid: 'nobody', applied: false });
  });

  it('with --workers 2 and three sessions sleeping, starts the third only after a first turn.end', async () => {
    const host = await h.startHost(h.tempDir(), ['--workers', '2']);
    host.send(turn('a', 'ra', '/sleep 0.4'));
    host.send(turn('b', 'rb', '/sleep 0.4'));
    host.send(turn('c', 'rc', '/sleep 0.4'));
    const third = await host.next('turn.started', { where: (f) => f['sid'] === 'c' });
    const firstEnd = host.all('turn.end')[0];
    expect(firstEnd, 'a turn.end must precede the third turn.started').to.not.equal(undefined);
    expect(host.frames.indexOf(firstEnd!)).to.be.lessThan(host.frames.indexOf(third));
    const startedBeforeThird = host.frames.slice(0, host.frames.indexOf(third)).filter((f) => f.type === 'turn.started');
    expect(startedBeforeThird.map((f) => f['sid']).sort()).to.deep.equal(['a', 'b']);
    await host.next('turn.end', { where: (f) => f['sid'] === 'c' });
  });

  it('admits waiting turns in arrival order', async () => {
    const host = await h.startHost(h.tempDir(), ['--workers', '1']);
    const sids = ['w1', 'w2', 'w3', 'w4'];
    for (const sid of sids) host.send(turn(sid, `r-${sid}`, '/sleep 0.05'));
    for (const sid of sids) await host.next('turn.end', { where: (f) => f['sid'] === sid });
    expect(host.all('turn.started').map((f) => f['sid'])).to.deep.equal(sids);
  });

  it('seeds a new session from turn.start history, and ignores history for a known one', async () => {
    const host = await h.startHost(h.tempDir());
    const history = [
      { role: 'user', content: 'earlier question' },
      { role: 'assistant', content: 'earlier answer' },
    ];
    host.send(turn('s1', 'r1', 'now', { history, session_key: 'stored-key' }));
    expect(await host.next('turn.end')).to.include({ message_count: 4, session_key: 'stored-key' });
    host.send(turn('s1', 'r2', 'again', { history }));
    expect(await host.next('turn.end')).to.include({ message_count: 6 });
  });

  it('answers debug sessions, turns, actors, requests and stats', async () => {
    const host = await h.startHost(h.tempDir());
    host.send(turn('s1', 'r1', '/sleep 30'));
    await host.next('turn.started');
    const ask = async (what: string): Promise<Frame> => {
      host.send({ type: 'debug', request_id: `d-${what}`, what });
      return host.next('debug.result', { where: (f) => f['request_id'] === `d-${what}` });
    };
    const sessions = (await ask('sessions'))['result'] as { sid: string; phase: string }[];
    expect(sessions).to.have.length(1);
    expect(sessions[0]).to.include({ sid: 's1', phase: 'running' });
    const turns = (await ask('turns'))['result'] as { active: number; running: { sid: string }[] };
    expect(turns.active).to.equal(1);
    expect(turns.running.map((t) => t.sid)).to.deep.equal(['s1']);
    const actors = (await ask('actors'))['result'] as { name: string; children: { name: string; children: unknown[] }[] }[];
    const sessionsActor = actors.find((a) => a.name === 'sessions')!;
    expect(sessionsActor.children).to.have.length(64);
    expect(actors.map((a) => a.name)).to.include('host');
    expect((await ask('requests'))['result']).to.deep.equal([]);
    expect((await ask('stats'))['result']).to.include({ workers: 8, activeTurns: 1, sessions: 1 });
  });
});

export function rpcEvents(host: HostProcess, type: string): Frame[] {
  return host.all('rpc', (f) => (f['message'] as { params?: { type?: string } }).params?.type === type);
}
