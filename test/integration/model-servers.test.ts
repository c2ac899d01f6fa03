// The model agent against servers as they really are (AGENT.md §4): each stream shape that vLLM,
// Ollama, llama.cpp, OpenRouter, LM Studio or a proxy is known to send, written byte for byte by
// the fake server, through the real host. One test per shape; the shapes that worked before this
// was written are here too, as guards.
import { expect } from 'chai';
import { readDatabase } from '../helpers/database.js';
import { chunkEvent, pairingProblem } from '../helpers/fake-openai.js';
import { answerRequest, eventsOf, modelScenes, nextServerRequest, runTurn, startModelHost, text, type ModelScene } from '../helpers/model-agent.js';
import { Harness, type Frame, type HostProcess } from '../helpers/processes.js';

const DONE = 'data: [DONE]\n\n';
const IDLE_S = 0.5;
const REQUEST_S = 3;
const usageOf = (prompt: number, completion: number) => ({ usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion } });

describe('model agent: the stream shapes real servers send (real host, byte-exact fake server)', function () {
  this.timeout(30_000);
  const h = new Harness();
  const { scene, cleanup } = modelScenes(h);
  let s: ModelScene;
  let host: HostProcess;
  let turns = 0;

  before(async () => {
    s = await scene({ idle_timeout_s: IDLE_S, request_timeout_s: REQUEST_S, max_retries: 0 });
    host = await startModelHost(h, s);
  });
  after(cleanup);

  /** Runs one turn of a new session whose model call gets `raw`; resolves with its end and the session. */
  async function turnWith(raw: string[], more: { contentType?: string; gapMs?: number; hold?: boolean } = {}): Promise<{ end: Frame; sid: string }> {
    const sid = `s${++turns}`;
    s.fake.reply({ raw, ...more });
    const end = await runTurn(host, sid, `r${turns}`, 'go');
    return { end, sid };
  }

  const messagesOf = (sid: string) => readDatabase(s.home, (db) => db.prepare('SELECT role, content FROM messages WHERE sid = ? ORDER BY seq').all(sid)) as { role: string; content: string }[];
  const lastRequest = () => s.fake.requests.at(-1)!.body;

  describe('what failed before', () => {
    it('tool arguments sent as an object (llama.cpp) are used as the object and sent back as their JSON text', async () => {
      const sid = `s${++turns}`;
      s.fake.reply(
        { raw: [chunkEvent({ tool_calls: [{ index: 0, id: 'obj1', type: 'function', function: { name: 'clarify', arguments: { question: 'colour?' } } }] }), chunkEvent({}, 'tool_calls'), DONE] },
        { text: ['blue it is'] },
      );
      host.send({ type: 'turn.start', sid, request_id: sid, text: 'go' });
      const asked = await nextServerRequest(host, sid);
      expect(asked.params).to.include({ question: 'colour?' });
      await answerRequest(host, sid, asked.id, { answer: 'blue' });
      const end = await host.ended(sid);
      expect(end.type).to.equal('turn.end');
      const call = lastRequest().messages.find((m) => m.role === 'assistant')!;
      expect(call.tool_calls![0]!.function.arguments).to.equal('{"question":"colour?"}');
      expect(text(host, sid)).to.equal('blue it is');
    });

    it('chunks without `choices` (`data: {}`, a usage chunk alone) are skipped; the usage is kept', async () => {
      const { end, sid } = await turnWith(['data: {}\n\n', chunkEvent({ content: 'fine' }), chunkEvent({}, 'stop'), chunkEvent(null, null, usageOf(3, 1)), DONE]);
      expect(end.type).to.equal('turn.end');
      expect(end['usage']).to.deep.equal({ prompt_tokens: 3, completion_tokens: 1, calls: 1 });
      expect(text(host, sid, 'message.complete')).to.equal('fine');
    });

    it('an empty `data:` keep-alive is skipped', async () => {
      const { end, sid } = await turnWith([chunkEvent({ content: 'still ' }), 'data: \n\n', 'data:\n\n', chunkEvent({ content: 'here' }, 'stop'), DONE]);
      expect(end.type).to.equal('turn.end');
      expect(text(host, sid, 'message.complete')).to.equal('still here');
    });

    it('an `error:` line outside a data frame (old llama.cpp) ends the turn upstream with the server\'s message', async () => {
      const { end, sid } = await turnWith(['error: {"code": 400, "message": "the request exceeds the available context size"}\n\n']);
      expect(end).to.include({ type: 'turn.error', reason: 'upstream' });
      expect(String(end['message'])).to.equal(`${s.fake.baseUrl}: the request exceeds the available context size`);
      expect(messagesOf(sid).map((m) => m.role)).to.deep.equal(['user']);
    });

    it('a bare JSON error body inside a 200 event stream (lemonade) ends the turn upstream with its message', async () => {
      const { end } = await turnWith(['{"error": {"message": "model failed to load", "type": "server_error"}}\n']);
      expect(end).to.include({ type: 'turn.error', reason: 'upstream' });
      expect(String(end['message'])).to.equal(`${s.fake.baseUrl}: model failed to load`);
    });

    it('a plain JSON chat.completion answered to a streaming request is used as the reply', async () => {
      const body = { id: 'c', object: 'chat.completion', created: 1, model: 'test-model', choices: [{ index: 0, message: { role: 'assistant', content: 'whole reply' }, finish_reason: 'stop' }], ...usageOf(9, 2) };
      const { end, sid } = await turnWith([JSON.stringify(body)], { contentType: 'application/json' });
      expect(end.type).to.equal('turn.end');
      expect(end['usage']).to.deep.equal({ prompt_tokens: 9, completion_tokens: 2, calls: 1 });
      expect(text(host, sid)).to.equal('whole reply');
      expect(messagesOf(sid).at(-1)).to.include({ role: 'assistant', content: 'whole reply' });
    });

    it('`event: error` whose data has only a `message` ends the turn with that message, not a JavaScript error', async () => {
      const { end } = await turnWith(['event: error\ndata: {"message": "model runner crashed"}\n\n']);
      expect(end).to.include({ type: 'turn.error', reason: 'upstream' });
      expect(String(end['message'])).to.equal(`${s.fake.baseUrl}: model runner crashed`);
    });

    it('a stream that ends without finish_reason and [DONE] fails upstream; the text already shown stays in the history', async () => {
      const { end, sid } = await turnWith([chunkEvent({ content: 'Partial ' }), chunkEvent({ content: 'answer' })]);
      expect(end).to.include({ type: 'turn.error', reason: 'upstream' });
      expect(String(end['message'])).to.equal(`${s.fake.baseUrl}: the stream ended before the reply was complete`);
      expect(messagesOf(sid).map((m) => [m.role, m.content])).to.deep.equal([['user', 'go'], ['assistant', 'Partial answer']]);
      const status = readDatabase(s.home, (db) => db.prepare('SELECT status, error FROM turns WHERE sid = ?').get(sid)) as { status: string; error: string };
      expect(status).to.deep.equal({ status: 'failed', error: String(end['message']) });
      s.fake.reply({ text: ['again'] });
      expect((await runTurn(host, sid, `again-${sid}`, 'more')).type).to.equal('turn.end');
      expect(lastRequest().messages.slice(1).map((m) => [m.role, m.content])).to.deep.equal([['user', 'go'], ['assistant', 'Partial answer'], ['user', 'more']]);
    });

    it('a tool call whose arguments were cut by the end of the stream never runs', async () => {
      const { end, sid } = await turnWith([chunkEvent({ tool_calls: [{ index: 0, id: 'cut1', type: 'function', function: { name: 'clarify', arguments: '{"quest' } }] })]);
      expect(end).to.include({ type: 'turn.error', reason: 'upstream' });
      expect(eventsOf(host, sid, 'tool.start')).to.have.length(0);
      expect(host.all('rpc', (f) => f['sid'] === sid && String((f['message'] as { id?: string }).id ?? '').startsWith('srq-'))).to.have.length(0);
      expect(messagesOf(sid).map((m) => m.role)).to.deep.equal(['user']);
    });

    it('a text streamed before an error frame stays in the history; the next request still pairs every call', async () => {
      const { end, sid } = await turnWith([chunkEvent({ content: 'I was saying' }), 'data: {"error": {"message": "upstream overloaded"}}\n\n']);
      expect(end).to.include({ type: 'turn.error', reason: 'upstream' });
      expect(String(end['message'])).to.include('upstream overloaded');
      expect(messagesOf(sid).at(-1)).to.include({ role: 'assistant', content: 'I was saying' });
      s.fake.reply({ text: ['ok'] });
      await runTurn(host, sid, `next-${sid}`, 'continue');
      expect(pairingProblem(lastRequest().messages)).to.equal(null);
    });

    it('comment pings longer than idle_timeout_s count as traffic: the reply after them arrives', async () => {
      const pings = Array.from({ length: 8 }, () => ': OPENROUTER PROCESSING\n\n');
      const { end, sid } = await turnWith([...pings, chunkEvent({ content: 'thought it over' }, 'stop'), DONE], { gapMs: 200 });
      expect(end.type, String(end['message'])).to.equal('turn.end');
      expect(text(host, sid)).to.equal('thought it over');
    });

    it('a server that only pings is still bounded by request_timeout_s: stalled', async () => {
      const began = performance.now();
      const { end } = await turnWith(Array.from({ length: 100 }, () => ':\n\n'), { gapMs: 100, hold: true });
      expect(end).to.include({ type: 'turn.error', reason: 'stalled' });
      expect(String(end['message'])).to.equal(`${s.fake.baseUrl} sent only keep-alive pings for ${REQUEST_S} s`);
      expect(performance.now() - began).to.be.within(REQUEST_S * 1000 - 100, REQUEST_S * 1000 + 5000);
    });

    it('finish_reason "length" marks the turn: a status.update and finish_reason on turn.end; its cut tool calls never run', async () => {
      const { end, sid } = await turnWith([chunkEvent({ content: 'cut he' }), chunkEvent({ tool_calls: [{ index: 0, id: 't', function: { name: 'clarify', arguments: '{"q' } }] }), chunkEvent({}, 'length'), DONE]);
      expect(end).to.include({ type: 'turn.end', finish_reason: 'length' });
      expect(eventsOf(host, sid, 'status.update').map((e) => e.payload['kind'])).to.include('length');
      expect(eventsOf(host, sid, 'tool.start')).to.have.length(0);
      expect(messagesOf(sid).at(-1)).to.include({ role: 'assistant', content: 'cut he' });
    });
  });

  describe('what already worked (guards)', () => {
    /** A turn whose first call asks for an unknown tool in the given chunks; the second call says "done". */
    async function toolTurn(raw: string[]): Promise<{ id: string; type: string; function: { name: string; arguments: string } }[]> {
      const sid = `s${++turns}`;
      s.fake.reply({ raw }, { text: ['done'] });
      const end = await runTurn(host, sid, `r${turns}`, 'go');
      expect(end.type, String(end['message'])).to.equal('turn.end');
      return lastRequest().messages.find((m) => m.role === 'assistant')!.tool_calls as never;
    }

    it('reasoning as `reasoning` (with `reasoning_details`)', async () => {
      const { sid } = await turnWith([chunkEvent({ reasoning: 'hmm', reasoning_details: [{ type: 'reasoning.text', text: 'hmm' }] }), chunkEvent({ content: 'ok' }, 'stop'), DONE]);
      expect(text(host, sid, 'reasoning.delta')).to.equal('hmm');
    });

    it('a whole tool call in one chunk, with finish_reason "stop" after it', async () => {
      const calls = await toolTurn([chunkEvent({ tool_calls: [{ index: 0, id: 'w1', type: 'function', function: { name: 'nope', arguments: '{"a":1}' } }] }, 'stop'), DONE]);
      expect(calls).to.deep.equal([{ id: 'w1', type: 'function', function: { name: 'nope', arguments: '{"a":1}' } }]);
    });

    it('calls without `index`, told apart by id', async () => {
      const calls = await toolTurn([chunkEvent({ tool_calls: [{ id: 'n1', function: { name: 'nope', arguments: '{}' } }] }), chunkEvent({ tool_calls: [{ id: 'n2', function: { name: 'nope', arguments: '{}' } }] }), chunkEvent({}, 'tool_calls'), DONE]);
      expect(calls.map((c) => c.id)).to.deep.equal(['n1', 'n2']);
    });

    it('a missing or empty call id: one is made, unique in the turn', async () => {
      const calls = await toolTurn([chunkEvent({ tool_calls: [{ index: 0, function: { name: 'nope', arguments: '{}' } }, { index: 1, id: '', function: { name: 'nope', arguments: '{}' } }] }), chunkEvent({}, 'tool_calls'), DONE]);
      expect(calls).to.have.length(2);
      expect(new Set(calls.map((c) => c.id)).size).to.equal(2);
      expect(calls.every((c) => c.id !== '')).to.equal(true);
    });

    it('usage in every chunk: the last one counts', async () => {
      const { end } = await turnWith([chunkEvent({ content: 'a' }, null, usageOf(5, 1)), chunkEvent({ content: 'b' }, 'stop', usageOf(5, 2)), DONE]);
      expect(end['usage']).to.deep.equal({ prompt_tokens: 5, completion_tokens: 2, calls: 1 });
    });

    it('CRLF framing and comment lines', async () => {
      const { sid } = await turnWith([': hello\r\n\r\n', chunkEvent({ content: 'crlf ' }).replace(/\n/g, '\r\n'), chunkEvent({ content: 'works' }, 'stop').replace(/\n/g, '\r'), 'data: [DONE]\r\n\r\n']);
      expect(text(host, sid, 'message.complete')).to.equal('crlf works');
    });

    it('no [DONE] after a finish_reason', async () => {
      const { end, sid } = await turnWith([chunkEvent({ content: 'finished' }, 'stop')]);
      expect(end.type).to.equal('turn.end');
      expect(text(host, sid, 'message.complete')).to.equal('finished');
    });
  });
});
