import { expect } from 'chai';
import { readDatabase } from '../helpers/database.js';
import { eventsOf, modelScenes, runTurn, startModelHost, text } from '../helpers/model-agent.js';
import { Harness } from '../helpers/processes.js';

describe('model agent: streamed turns against an OpenAI-compatible server (real host process)', () => {
  const h = new Harness();
  const { scene, cleanup } = modelScenes(h);
  afterEach(cleanup);

  it('streams each fragment as message.delta and reasoning as reasoning.delta; turn.end carries the usage; model and usage are stored', async () => {
    const s = await scene({ system_prompt: 'You are a test.' });
    s.fake.reply({ reasoning: ['thinking ', 'hard'], text: ['Hel', 'lo ', 'there'], usage: { prompt_tokens: 42, completion_tokens: 5 } });
    const host = await startModelHost(h, s);
    const end = await runTurn(host, 's1', 'r1', 'hi');
    expect(end.type).to.equal('turn.end');
    expect(end['usage']).to.deep.equal({ prompt_tokens: 42, completion_tokens: 5, calls: 1 });
    expect(eventsOf(host, 's1', 'message.delta').map((e) => e.payload['text'])).to.deep.equal(['Hel', 'lo ', 'there']);
    expect(text(host, 's1', 'reasoning.delta')).to.equal('thinking hard');
    expect(eventsOf(host, 's1', 'message.complete')[0]!.payload['text']).to.equal('Hello there');
    const sent = s.fake.requests[0]!.body;
    expect(sent.stream).to.equal(true);
    expect(sent.stream_options).to.deep.equal({ include_usage: true });
    expect(sent.model).to.equal('test-model');
    expect(sent.messages).to.deep.equal([
      { role: 'system', content: 'You are a test.' },
      { role: 'user', content: 'hi' },
    ]);
    const turn = readDatabase(s.home, (db) => db.prepare('SELECT status, model, prompt_tokens, completion_tokens, model_calls FROM turns').get());
    expect(turn).to.deep.equal({ status: 'completed', model: 'test-model', prompt_tokens: 42, completion_tokens: 5, model_calls: 1 });
    const history = await h.runCli(['history', 's1', '--home', s.home, '--json']);
    const entries = JSON.parse(history.stdout) as Record<string, unknown>[];
    expect(entries[1]).to.include({ role: 'assistant', content: 'Hello there', model: 'test-model' });
    expect(entries[1]!['usage']).to.deep.equal({ prompt_tokens: 42, completion_tokens: 5, calls: 1 });
    const plain = await h.runCli(['history', 's1', '--home', s.home]);
    expect(plain.stdout).to.include('[1] assistant: Hello there  [test-model: 42 prompt + 5 completion tokens, 1 call]');
  });

  it('sends the system prompt (config, personality, slash.prompt), then the history, then the prompt; slash.model changes later requests', async () => {
    const s = await scene({ system_prompt: 'Base.', personalities: { pirate: 'Talk like a pirate.' } });
    s.fake.fallback = () => ({ text: ['fine'] });
    const host = await startModelHost(h, s);
    await runTurn(host, 's1', 'r1', 'first');
    const control = async (request_id: string, route_name: string, params: object) => {
      host.send({ type: 'control', sid: 's1', request_id, route_name, params });
      return host.nextOf(['control.ack', 'control.error'], { where: (f) => f['request_id'] === request_id });
    };
    expect((await control('c1', 'slash.personality', { personality: 'pirate' })).type).to.equal('control.ack');
    expect((await control('c2', 'slash.prompt', { prompt: 'Be brief.' })).type).to.equal('control.ack');
    expect((await control('c3', 'slash.model', { model: 'other-model' })).type).to.equal('control.ack');
    const unknown = await control('c4', 'slash.personality', { personality: 'ghost' });
    expect(unknown).to.include({ type: 'control.error' });
    expect(String(unknown['message'])).to.include('unknown personality "ghost"').and.include('pirate');
    await runTurn(host, 's1', 'r2', 'second');
    const sent = s.fake.requests[1]!.body;
    expect(sent.model).to.equal('other-model');
    expect(sent.messages).to.deep.equal([
      { role: 'system', content: 'Base.\n\nTalk like a pirate.\n\nBe brief.' },
      { role: 'user', content: 'first' },
      { role: 'assistant', content: 'fine' },
      { role: 'user', content: 'second' },
    ]);
  });

  it('without a usage chunk, turn.end reports zeros for the tokens and counts the call', async () => {
    const s = await scene();
    s.fake.reply({ text: ['no usage'], usage: null });
    const host = await startModelHost(h, s);
    const end = await runTurn(host, 's1', 'r1', 'hi');
    expect(end['usage']).to.deep.equal({ prompt_tokens: 0, completion_tokens: 0, calls: 1 });
  });

  it('the script agent is unchanged: no usage on turn.end, no tool fields in its history', async () => {
    const home = h.tempDir();
    const host = await h.startHost(home);
    const end = await runTurn(host, 's1', 'r1', 'plain words');
    expect(end).to.not.have.property('usage');
    const history = JSON.parse((await h.runCli(['history', 's1', '--home', home, '--json'])).stdout) as Record<string, unknown>[];
    expect(history).to.deep.equal([
      { seq: 0, role: 'user', content: 'plain words', turn_id: end['turn_id'], by: 'owner' },
      { seq: 1, role: 'assistant', content: 'plain words', turn_id: end['turn_id'] },
    ]);
  });
});
