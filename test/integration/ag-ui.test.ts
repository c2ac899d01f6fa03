// AG-UI over the edge (PROTOCOL.md §7.1), driven by AG-UI's own HTTP client (`HttpAgent` of
// @ag-ui/client, which checks the order of the events it reads) against a real daemon; every
// event is also checked against @ag-ui/core's schema.
import { HttpAgent } from '@ag-ui/client';
import type { BaseEvent } from '@ag-ui/core';
import { EventSchemas } from '@ag-ui/core/schemas';
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { request, type ClientRequest } from 'node:http';
import { pdfDocument, pngImage } from '../helpers/content-files.js';
import { startDaemon, TestClient, type Daemon } from '../helpers/daemon.js';
import { Harness } from '../helpers/processes.js';

const TOKEN = 'ag-ui-test-token-0123456789abcdef';

describe('AG-UI over the edge: AG-UI\'s own HttpAgent against a real daemon', function () {
  this.timeout(60_000);
  const h = new Harness();
  let daemon: Daemon;
  let url: string;
  before(async () => {
    daemon = await startDaemon(h, ['--listen', '127.0.0.1:0'], { TURNHOST_TOKEN: TOKEN });
    url = (JSON.parse((await h.runCli(['status', '--home', daemon.home, '--json'])).stdout) as { http: { url: string } }).http.url;
  });
  after(() => h.cleanup());

  function agent(threadId: string): HttpAgent {
    return new HttpAgent({ url: `${url}/v1/ag-ui`, headers: { authorization: `Bearer ${TOKEN}` }, threadId });
  }

  /** One run: the events it read, each checked against AG-UI's schema. */
  async function run(on: HttpAgent, parameters: Parameters<HttpAgent['runAgent']>[0] = {}): Promise<BaseEvent[]> {
    const events: BaseEvent[] = [];
    await on.runAgent(parameters, { onEvent: ({ event }) => void events.push(EventSchemas.parse(event) as BaseEvent) });
    return events;
  }

  const types = (events: BaseEvent[]) => events.map((e) => e.type);
  const reply = (events: BaseEvent[]) => events.filter((e) => e.type === 'TEXT_MESSAGE_CONTENT').map((e) => (e as unknown as { delta: string }).delta).join('');
  const finished = (events: BaseEvent[]) => events.at(-1) as unknown as { type: string; outcome?: { type: string; interrupts?: { id: string; reason: string; message: string }[] } };

  it('runs a turn: RUN_STARTED, the reply as one text message, RUN_FINISHED; the session is the thread', async () => {
    const on = agent('ag-1');
    on.addMessage({ id: 'u1', role: 'user', content: 'hello from a web app' });
    const events = await run(on, { runId: 'run-1' });
    expect(types(events)[0]).to.equal('RUN_STARTED');
    expect(types(events).filter((t) => t.startsWith('TEXT_MESSAGE_') && t !== 'TEXT_MESSAGE_CONTENT')).to.deep.equal(['TEXT_MESSAGE_START', 'TEXT_MESSAGE_END']);
    expect(reply(events)).to.equal('hello from a web app');
    expect(finished(events)).to.deep.include({ type: 'RUN_FINISHED', outcome: { type: 'success' } });
    expect(on.messages.at(-1)).to.include({ role: 'assistant', content: 'hello from a web app' });
    const history = (await h.runCli(['history', 'ag-1', '--home', daemon.home, '--json'])).stdout;
    expect((JSON.parse(history) as { content: string }[]).map((m) => m.content)).to.deep.equal(['hello from a web app', 'hello from a web app']);
  });

  it('a user message with an image and a document part (PROTOCOL.md §2.4): stored as files, the agent told of each', async () => {
    const on = agent('ag-files');
    const png = pngImage(4, 4, 31);
    const pdf = pdfDocument('from ag-ui');
    on.addMessage({
      id: 'u1',
      role: 'user',
      content: [
        { type: 'text', text: 'both of these' },
        { type: 'image', source: { type: 'data', value: png.toString('base64'), mimeType: 'image/png' } },
        { type: 'document', source: { type: 'data', value: pdf.toString('base64'), mimeType: 'application/pdf' }, metadata: { filename: 'brief.pdf' } },
      ],
    } as Parameters<HttpAgent['addMessage']>[0]);
    const events = await run(on, { runId: 'run-files' });
    expect(finished(events)).to.deep.include({ type: 'RUN_FINISHED', outcome: { type: 'success' } });
    const hash = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
    expect(reply(events)).to.equal(`both of these\n[image image/png ${png.length} bytes sha256:${hash(png)}]\n[file brief.pdf application/pdf ${pdf.length} bytes sha256:${hash(pdf)}]`);
  });

  it('a tool call: TOOL_CALL_START, _END and _RESULT with the tool\'s name and outcome', async () => {
    const on = agent('ag-2');
    on.addMessage({ id: 'u1', role: 'user', content: 'look it up\n/tool search 0.05' });
    const events = await run(on, { runId: 'run-tool' });
    const tool = events.filter((e) => e.type.startsWith('TOOL_CALL_')) as unknown as { type: string; toolCallId: string; toolCallName?: string; content?: string }[];
    expect(tool.map((e) => e.type)).to.deep.equal(['TOOL_CALL_START', 'TOOL_CALL_END', 'TOOL_CALL_RESULT']);
    expect(tool[0]!.toolCallName).to.equal('search');
    expect(new Set(tool.map((e) => e.toolCallId)).size).to.equal(1);
    expect(reply(events)).to.include('tool search ok');
  });

  it('a clarify ends the run with an interrupt while the turn waits; the next run\'s resume answers it and streams the rest of the same turn', async () => {
    const on = agent('ag-3');
    on.addMessage({ id: 'u1', role: 'user', content: 'before the question\n/ask which colour?' });
    const first = await run(on, { runId: 'run-ask' });
    const outcome = finished(first).outcome!;
    expect(outcome.type).to.equal('interrupt');
    expect(outcome.interrupts).to.have.length(1);
    expect(outcome.interrupts![0]).to.include({ reason: 'clarify', message: 'which colour?' });
    expect(reply(first)).to.equal('before the question');
    const second = await run(on, { runId: 'run-answer', resume: [{ interruptId: outcome.interrupts![0]!.id, status: 'resolved', payload: 'blue' }] });
    expect(reply(second)).to.include('answer: blue');
    expect(finished(second).outcome).to.deep.equal({ type: 'success' });
    const history = JSON.parse((await h.runCli(['history', 'ag-3', '--home', daemon.home, '--json'])).stdout) as { role: string; turn_id: string }[];
    expect(history.map((m) => m.role)).to.deep.equal(['user', 'assistant']);
  });

  it('a repeated runId runs nothing twice: the second run shows the first one\'s reply', async () => {
    const on = agent('ag-4');
    on.addMessage({ id: 'u1', role: 'user', content: 'only once' });
    const first = await run(on, { runId: 'run-same' });
    const again = agent('ag-4');
    again.addMessage({ id: 'u1', role: 'user', content: 'only once' });
    const second = await run(again, { runId: 'run-same' });
    expect(reply(second)).to.equal(reply(first));
    expect(finished(second)).to.deep.include({ type: 'RUN_FINISHED' });
    const history = JSON.parse((await h.runCli(['history', 'ag-4', '--home', daemon.home, '--json'])).stdout) as unknown[];
    expect(history).to.have.length(2);
  });

  it('the example (examples/ag-ui.mjs) runs a turn and answers a clarify and an approval through resume, from stdin', async () => {
    const { code, stdout } = await h.runScript('examples/ag-ui.mjs', ['pick a colour\n/ask which one?\n/approve paint it'], { TURNHOST_URL: url, TURNHOST_TOKEN: TOKEN, THREAD_ID: 'ag-example' }, 'teal\ny\n');
    expect(code).to.equal(0);
    expect(stdout).to.equal('pick a colour\nanswer: teal\napproved: paint it\n');
  });

  it('bad input is refused before any stream, naming what is wrong: a body that is no RunAgentInput, a bad threadId, no token, a GET', async () => {
    const post = (body: unknown, headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` }) =>
      fetch(`${url}/v1/ag-ui`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });
    const noMessages = await post({ threadId: 't', runId: 'r', tools: [], context: [] });
    expect(noMessages.status).to.equal(400);
    expect(((await noMessages.json()) as { error: { message: string } }).error.message).to.match(/invalid RunAgentInput: messages/);
    const badThread = await post({ threadId: 'a\nb', runId: 'r', messages: [], tools: [], context: [] });
    expect(badThread.status).to.equal(400);
    expect(((await badThread.json()) as { error: { message: string } }).error.message).to.include('threadId');
    expect((await post('{not json')).status).to.equal(400);
    expect((await post({ threadId: 't', runId: 'r', messages: [], tools: [], context: [] }, {})).status).to.equal(401);
    expect((await fetch(`${url}/v1/ag-ui`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).to.equal(405);
    const empty = agent('ag-8');
    const events: BaseEvent[] = [];
    await empty.runAgent({ runId: 'run-empty' }, { onEvent: ({ event }) => void events.push(event) }).catch(() => {});
    expect(events.at(-1)).to.deep.include({ type: 'RUN_ERROR', code: 'invalid' });
  });

  it('a run on a busy session is queued and streams its own turn; a failed turn is RUN_ERROR with the reason as code; front-end tools are refused by name', async () => {
    const client = await TestClient.connect(daemon);
    try {
      await client.call('prompt.submit', { session_id: 'ag-5', text: 'busy\n/sleep 0.5' });
      await client.nextEvent('turn.started', 'ag-5');
      const queued = agent('ag-5');
      queued.addMessage({ id: 'u1', role: 'user', content: 'after the busy one' });
      expect(reply(await run(queued, { runId: 'run-queued' }))).to.equal('after the busy one');
    } finally {
      client.close();
    }
    const failing = agent('ag-6');
    failing.addMessage({ id: 'u1', role: 'user', content: '/fail the agent broke' });
    const errors: BaseEvent[] = [];
    await failing.runAgent({ runId: 'run-fail' }, { onEvent: ({ event }) => void errors.push(event) }).catch(() => {});
    expect(errors.at(-1)).to.deep.include({ type: 'RUN_ERROR', code: 'exception' });
    expect((errors.at(-1) as unknown as { code: string; message: string }).message).to.include('the agent broke');
    const tools = agent('ag-7');
    tools.addMessage({ id: 'u1', role: 'user', content: 'use my tool' });
    const refused: BaseEvent[] = [];
    await tools.runAgent({ runId: 'run-tools', tools: [{ name: 'open_map', description: 'a front-end tool', parameters: {} }] }, { onEvent: ({ event }) => void refused.push(event) }).catch(() => {});
    expect(refused.at(-1)).to.deep.include({ type: 'RUN_ERROR', code: 'unsupported' });
    expect((refused.at(-1) as unknown as { message: string }).message).to.include('front-end tools').and.include('open_map');
  });
});

describe('AG-UI runs are bounded: a flood of runs is refused past 64, and runs whose client left before their turn started are withdrawn (real daemon)', function () {
  this.timeout(60_000);
  const h = new Harness();
  after(() => h.cleanup());

  it('70 runs of /sleep 4 on new threads: 64 open, 6 refused 429 with Retry-After; once their clients leave, a prompt on another session ends within one sleep', async () => {
    const daemon = await startDaemon(h, ['--listen', '127.0.0.1:0', '--workers', '2'], { TURNHOST_TOKEN: TOKEN });
    const status = JSON.parse((await h.runCli(['status', '--home', daemon.home, '--json'])).stdout) as { http: { url: string } };
    const { port } = new URL(status.http.url);
    const input = (n: number) =>
      JSON.stringify({ threadId: `flood-${n}`, runId: `run-${n}`, state: {}, messages: [{ id: 'u', role: 'user', content: 'slow\n/sleep 4' }], tools: [], context: [], forwardedProps: {} });
    const requests: ClientRequest[] = [];
    const statuses = await Promise.all(
      Array.from({ length: 70 }, (_, n) =>
        new Promise<{ status: number; retryAfter: string | undefined }>((resolve, reject) => {
          const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/v1/ag-ui', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', accept: 'text/event-stream' } }, (res) => {
            res.on('data', () => {});
            res.on('error', () => {});
            resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] });
          });
          req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
          requests.push(req);
          req.end(input(n));
        }),
      ),
    );
    expect(statuses.filter((s) => s.status === 200)).to.have.length(64);
    const refused = statuses.filter((s) => s.status === 429);
    expect(refused).to.have.length(6);
    expect(refused.every((s) => s.retryAfter === '1')).to.equal(true);
    for (const req of requests) req.destroy();
    const client = await TestClient.connect(daemon);
    try {
      const began = performance.now();
      await client.call('prompt.submit', { session_id: 'someone-else', text: 'hello' });
      await client.nextEvent('turn.end', 'someone-else');
      // Two workers held by /sleep 4 turns at most: the prompt waits for one of them, not for 62 more.
      expect(performance.now() - began).to.be.below(6_000);
    } finally {
      client.close();
    }
  });
});
