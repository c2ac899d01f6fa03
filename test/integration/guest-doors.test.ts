// A guest agent (AGENT.md §6) through every door of one daemon: `turnhost chat`, turnhost/client
// over the WebSocket, REST with its event stream, and AG-UI's own HttpAgent. (The page: the
// browser suite; an editor through `turnhost acp`: test/guests/ with Claude Code.)
import { HttpAgent } from '@ag-ui/client';
import { expect } from 'chai';
import { connect, type ApprovalRequest, type SessionEvent } from '../../client/index.js';
import { readToken } from '../../edge/http-token.js';
import { startDaemon, TestClient } from '../helpers/daemon.js';
import { guestArgs, guestScene } from '../helpers/guests.js';
import { httpRequest, SseReader } from '../helpers/http.js';
import { Harness } from '../helpers/processes.js';

describe('a guest agent through every door: chat, turnhost/client over WebSocket, REST and SSE, AG-UI', function () {
  this.timeout(60_000);
  const h = new Harness();
  after(() => h.cleanup());

  it('each door runs the guest\'s turns, with its tool calls, plan and permission options', async () => {
    const scene = guestScene(h);
    const daemon = await startDaemon(h, [...guestArgs(scene), '--listen', '127.0.0.1:0'], {}, scene.home);
    const socket = await TestClient.connect(daemon);
    const url = (await socket.call<{ http: { url: string } }>('host.status')).http.url;
    const port = Number(new URL(url).port);
    const token = readToken(scene.home);
    const auth = { authorization: `Bearer ${token}` };

    // turnhost chat, as a new user types it.
    const chat = await h.runCli(['chat', '--home', scene.home, ...guestArgs(scene), 'hello from chat'], {}, 30_000);
    expect(chat.code).to.equal(0);
    expect(chat.stdout).to.include('guest: hello from chat');

    // turnhost/client over the WebSocket: a permission answered by the guest's own option.
    const client = await connect({ url, token });
    const asked: ApprovalRequest[] = [];
    client.onApproval((request) => {
      asked.push(request);
      return { option_id: 'once' };
    });
    const { session_id } = await client.createSession({ session_id: 'lib' });
    const events: SessionEvent[] = [];
    for await (const event of client.turn(session_id, 'tool make build')) events.push(event);
    expect(asked[0]!.options!.map((o) => o.option_id)).to.deep.equal(['always', 'once', 'no']);
    expect(events.find((e) => e.type === 'tool.start')!.payload).to.deep.include({ name: 'acp_execute', title: 'make build' });
    expect(events.filter((e) => e.type === 'message.delta').map((e) => e.payload.text).join('')).to.equal('let me run it. ran make build');
    expect(events.find((e) => e.type === 'tool.complete')!.payload).to.deep.include({ summary: 'output of make build (once)' });
    client.close();

    // REST and its event stream: a plan, as status.update with its entries.
    expect((await httpRequest(port, { method: 'POST', path: '/v1/sessions', headers: auth, body: { session_id: 'rest' } })).status).to.equal(201);
    const stream = new SseReader(port, '/v1/sessions/rest/events', auth);
    await stream.until((seen) => seen.some((e) => e.event === 'ready'), 'the stream\'s ready');
    expect((await httpRequest(port, { method: 'POST', path: '/v1/sessions/rest/prompts', headers: auth, body: { text: 'plan' } })).status).to.equal(202);
    await stream.until((seen) => seen.some((e) => e.event === 'turn.end'), 'the turn\'s end on the stream');
    const plan = JSON.parse(stream.events.find((e) => e.event === 'status.update')!.data) as { kind: string; entries: unknown[] };
    expect(plan.kind).to.equal('plan');
    expect(plan.entries).to.have.length(2);
    const history = (await httpRequest(port, { path: '/v1/sessions/rest/history', headers: auth })).json() as { messages: { content: string }[] };
    expect(history.messages.map((m) => m.content)).to.deep.equal(['plan', 'planned']);
    stream.close();

    // AG-UI's own client.
    const agUi = new HttpAgent({ url: `${url}/v1/ag-ui`, headers: auth, threadId: 'ag' });
    agUi.addMessage({ id: 'u1', role: 'user', content: 'hello from ag-ui' });
    const deltas: string[] = [];
    await agUi.runAgent({ runId: 'run-guest' }, { onEvent: ({ event }) => void (event.type === 'TEXT_MESSAGE_CONTENT' && deltas.push((event as unknown as { delta: string }).delta)) });
    expect(deltas.join('')).to.equal('guest: hello from ag-ui');
    expect(agUi.messages.at(-1)).to.include({ role: 'assistant', content: 'guest: hello from ag-ui' });

    // A guest's permission as an AG-UI interrupt, resumed with one of the guest's own options.
    agUi.addMessage({ id: 'u2', role: 'user', content: 'tool make ag' });
    const seen: { type: string; [key: string]: unknown }[] = [];
    await agUi.runAgent({ runId: 'run-ask' }, { onEvent: ({ event }) => void seen.push(event as unknown as { type: string }) });
    const interrupt = (seen.at(-1) as { outcome?: { interrupts?: { id: string; reason: string; responseSchema: { properties: { option_id: { enum: string[] } } } }[] } }).outcome!.interrupts![0]!;
    expect(interrupt.reason).to.equal('approval');
    expect(interrupt.responseSchema.properties.option_id.enum).to.deep.equal(['always', 'once', 'no']);
    const resumed: string[] = [];
    await agUi.runAgent(
      { runId: 'run-resume', resume: [{ interruptId: interrupt.id, status: 'resolved', payload: { option_id: 'always' } }] } as Parameters<HttpAgent['runAgent']>[0],
      { onEvent: ({ event }) => void (event.type === 'TEXT_MESSAGE_CONTENT' && resumed.push((event as unknown as { delta: string }).delta)) },
    );
    expect(resumed.join('')).to.include('ran make ag');
    const agHistory = (await httpRequest(port, { path: '/v1/sessions/ag/history', headers: auth })).json() as { messages: { role: string; content: string }[] };
    expect(agHistory.messages.find((m) => m.role === 'tool')!.content).to.equal('output of make ag (always)');
  });
});
