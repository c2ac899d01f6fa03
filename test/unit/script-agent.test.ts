import { UNTRACED } from '../../agents/genai-spans.js';
import { expect } from 'chai';
import type { AgentEvent, TurnContext } from '../../agents/agent.js';
import { scriptAgent } from '../../agents/script.js';

function turn(prompt: string, answers: Record<string, unknown> = {}) {
  const events: AgentEvent[] = [];
  const asked: { method: string; params: Record<string, unknown> }[] = [];
  const controller = new AbortController();
  const steering: string[] = [];
  const context: TurnContext = {
    sid: 's',
    turnId: 't',
    prompt,
    content: [],
    blob: async (ref) => {
      throw new Error(`no blob ${ref} in this test`);
    },
    keepBlob: async () => {
      throw new Error('the script agent keeps no blob');
    },
    history: [],
    overrides: {},
    cwd: null,
    agentSessionId: null,
    signal: controller.signal,
    emit: (e) => events.push(e),
    append: () => {},
    save: async () => {},
    reportUsage: () => {},
    trace: UNTRACED,
    keepAgentSession: async () => {},
    forkOrigin: async () => null,
    workspace: async () => ({ person: 'owner', flat: false }),
    compressHistory: async () => {},
    takeSteering: () => steering.splice(0),
    steeringArrival: async () => {},
    ask: async (method, params) => {
      asked.push({ method, params });
      return answers[method] ?? null;
    },
  };
  return { context, events, asked, controller };
}

const deltas = (events: AgentEvent[]) => events.filter((e) => e.type === 'message.delta').map((e) => (e as { text: string }).text);

describe('script agent', () => {
  it('echoes plain lines word by word; the deltas add up to the reply', async () => {
    const t = turn('hello  big world\nsecond line');
    const result = await scriptAgent.runTurn(t.context);
    expect(result.reply).to.equal('hello  big world\nsecond line');
    expect(deltas(t.events)).to.deep.equal(['hello', '  big', ' world', '\nsecond', ' line']);
    expect(deltas(t.events).join('')).to.equal(result.reply);
  });

  it('adds one line per directive outcome after the echoed text', async () => {
    const t = turn('hi\n/ask colour?\n/batch a | b\n/approve rm -rf build\n/tool grep 0', {
      'clarify.request': { answer: 'red', answers: { q0: 'x', q1: 'y' } },
      'approval.request': { approved: true },
    });
    const result = await scriptAgent.runTurn(t.context);
    expect(result.reply).to.equal('hi\nanswer: red\nanswers: q0=x, q1=y\napproved: rm -rf build\ntool grep ok');
    expect(t.asked).to.deep.equal([
      { method: 'clarify.request', params: { question: 'colour?' } },
      { method: 'clarify.request', params: { questions: [{ id: 'q0', question: 'a' }, { id: 'q1', question: 'b' }] } },
      { method: 'approval.request', params: { question: 'rm -rf build' } },
    ]);
    expect(t.events.filter((e) => e.type.startsWith('tool'))).to.deep.equal([
      { type: 'tool.start', id: 'tool-1', name: 'grep' },
      { type: 'tool.complete', id: 'tool-1', ok: true },
    ]);
    expect(deltas(t.events).join('')).to.equal(result.reply);
  });

  it('answers (none) and denied when the questions go unanswered', async () => {
    const t = turn('/ask --timeout 0.5 colour?\n/batch a | b\n/approve deploy');
    expect((await scriptAgent.runTurn(t.context)).reply).to.equal('answer: (none)\nanswers: q0=(none), q1=(none)\ndenied: deploy');
  });

  it('ends a sleep at once when interrupted and runs nothing after it', async () => {
    const t = turn('before\n/sleep 30\n/tool late 0');
    const started = performance.now();
    const running = scriptAgent.runTurn(t.context);
    setTimeout(() => t.controller.abort(), 50);
    const result = await running;
    expect(performance.now() - started).to.be.lessThan(1000);
    expect(result.reply).to.equal('before');
    expect(t.events.some((e) => e.type === 'tool.start')).to.equal(false);
  });

  it('throws for /fail and reports an unknown directive', async () => {
    let failure: unknown;
    await scriptAgent.runTurn(turn('/fail the disk is on fire').context).catch((e: unknown) => (failure = e));
    expect((failure as Error).message).to.equal('the disk is on fire');
    expect((await scriptAgent.runTurn(turn('/dance').context)).reply).to.equal('unknown directive: /dance');
  });

  it('keeps the last four messages behind one system message when compressing', async () => {
    const history = Array.from({ length: 7 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `m${i}` }));
    const compressed = await scriptAgent.compress!(history, 'plans', { sid: 's', overrides: {} });
    expect(compressed).to.deep.equal([{ role: 'system', content: '[compressed 3 earlier messages (focus: plans)]' }, ...history.slice(3)]);
  });
});
