// turnhost's agents as A2A agents (PROTOCOL.md §7.3), against a real daemon's edge, with the
// @a2a-js/sdk client made from the Agent Card: blocking and immediate sends, a stream and a
// resubscription, a question answered by the next message of its task, a cancel, a task lost with
// its host, another person's task, and the v0.3 names.
import { CancelTaskRequest, GetTaskRequest, ListTasksRequest, SendMessageRequest, SubscribeToTaskRequest, TaskState, type StreamResponse, type Task } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory, type Client } from '@a2a-js/sdk/client';
import { expect } from 'chai';
import { hostPid, startEdgeDaemon, TestClient } from '../helpers/daemon.js';
import { Harness } from '../helpers/processes.js';

const TOKEN = 'a2a-door-token-0123456789abcdef0123';

const textOf = (task: Task): string => task.artifacts.flatMap((a) => a.parts).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
const send = (text: string, more: { contextId?: string; taskId?: string; returnImmediately?: boolean } = {}) =>
  SendMessageRequest.fromJSON({
    message: { messageId: `m-${Math.random()}`, role: 'ROLE_USER', parts: [{ text }], ...(more.contextId ? { contextId: more.contextId } : {}), ...(more.taskId ? { taskId: more.taskId } : {}) },
    ...(more.returnImmediately ? { configuration: { returnImmediately: true } } : {}),
  });

describe('A2A: turnhost\'s agents as A2A agents (real daemon, the @a2a-js/sdk client)', function () {
  this.timeout(60_000);
  const h = new Harness();
  afterEach(() => h.cleanup());

  const edge = () => startEdgeDaemon(h, TOKEN);


  /** A client made from the default agent's card, as the token's person. */
  async function a2a(url: string, token = TOKEN): Promise<Client> {
    const authed: typeof fetch = (input, init) => {
      const headers = new Headers(init?.headers);
      headers.set('authorization', `Bearer ${token}`);
      return fetch(input, { ...init, headers });
    };
    return new ClientFactory({ transports: [new JsonRpcTransportFactory({ fetchImpl: authed })] }).createFromUrl(url);
  }

  /** Where a stream left its task: its last status update's state, or its Task's when it was over already. */
  const finalState = (events: readonly StreamResponse[]): TaskState | undefined => {
    const last = events.at(-1)?.payload;
    return last?.$case === 'statusUpdate' ? last.value.status?.state : last?.$case === 'task' ? last.value.status?.state : undefined;
  };

  async function collect(stream: AsyncGenerator<StreamResponse, void, undefined>): Promise<StreamResponse[]> {
    const events: StreamResponse[] = [];
    for await (const event of stream) events.push(event);
    return events;
  }

  it('serves its cards without a login (bearer declared) and no method without one; a blocking send answers the task COMPLETED with the reply as its artifact, which GetTask and ListTasks read back', async () => {
    const { url } = await edge();
    const card = (await (await fetch(`${url}/.well-known/agent-card.json`)).json()) as { supportedInterfaces: { url: string; protocolVersion: string }[]; securitySchemes: Record<string, unknown>; capabilities: Record<string, unknown> };
    expect(card.supportedInterfaces.map((i) => i.protocolVersion)).to.deep.equal(['1.0', '0.3']);
    expect(card.securitySchemes).to.have.property('bearer');
    expect(card.capabilities).to.deep.include({ streaming: true });
    const agentUrl = card.supportedInterfaces[0]!.url;
    expect((await fetch(`${agentUrl}/.well-known/agent-card.json`)).status).to.equal(200);
    expect((await fetch(agentUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status).to.equal(401);

    const client = await a2a(url);
    const task = (await client.sendMessage(send('hello over a2a'))) as Task;
    expect(task.status?.state).to.equal(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(task)).to.equal('hello over a2a');
    const read = await client.getTask(GetTaskRequest.fromJSON({ id: task.id }));
    expect([read.contextId, read.status?.state, textOf(read)]).to.deep.equal([task.contextId, TaskState.TASK_STATE_COMPLETED, 'hello over a2a']);
    const listed = await client.listTasks(ListTasksRequest.fromJSON({ contextId: task.contextId }));
    expect(listed.tasks.map((t) => [t.id, textOf(t)])).to.deep.equal([[task.id, 'hello over a2a']]);
  });

  it('a stream sends the Task, the reply as appends and the end; an immediate send answers WORKING and a resubscription follows it to the end', async () => {
    const { url } = await edge();
    const client = await a2a(url);
    const events = await collect(client.sendMessageStream(send('one two three')));
    expect(events[0]!.payload?.$case).to.equal('task');
    const appended = events.flatMap((e) => (e.payload?.$case === 'artifactUpdate' ? e.payload.value.artifact!.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')) : []));
    const first = events[0]!.payload?.$case === 'task' ? textOf(events[0]!.payload.value) : '';
    expect(first + appended.join('')).to.equal('one two three');
    expect(finalState(events)).to.equal(TaskState.TASK_STATE_COMPLETED);

    const started = (await client.sendMessage(send('slow\n/sleep 1.5\nend', { returnImmediately: true }))) as Task;
    expect([TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING]).to.include(started.status?.state);
    const followed = await collect(client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: started.id })));
    expect(followed[0]!.payload?.$case).to.equal('task');
    expect(finalState(followed)).to.equal(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(await client.getTask(GetTaskRequest.fromJSON({ id: started.id })))).to.equal('slow\nend');
  });

  it('a question is INPUT_REQUIRED with the question as its status message; the next message of that task answers it; CancelTask cancels', async () => {
    const { url } = await edge();
    const client = await a2a(url);
    const asked = (await client.sendMessage(send('/ask which colour?'))) as Task;
    expect(asked.status?.state).to.equal(TaskState.TASK_STATE_INPUT_REQUIRED);
    const question = asked.status?.message?.parts[0]?.content;
    expect(question?.$case === 'text' ? question.value : null).to.equal('which colour?');
    const answered = (await client.sendMessage(send('teal', { contextId: asked.contextId, taskId: asked.id }))) as Task;
    expect([answered.id, answered.status?.state, textOf(answered)]).to.deep.equal([asked.id, TaskState.TASK_STATE_COMPLETED, 'answer: teal']);

    const long = (await client.sendMessage(send('/sleep 30', { returnImmediately: true }))) as Task;
    const cancelled = await client.cancelTask(CancelTaskRequest.fromJSON({ id: long.id }));
    expect(cancelled.status?.state).to.equal(TaskState.TASK_STATE_CANCELED);
  });

  it('a task whose host is killed -9 reads FAILED (lost); another person finds neither it nor its context; the v0.3 names answer too', async () => {
    const { daemon, url } = await edge();
    const client = await a2a(url);
    const running = (await client.sendMessage(send('/sleep 30', { returnImmediately: true }))) as Task;
    process.kill(await hostPid(await TestClient.connect(daemon)), 'SIGKILL');
    const followed = await collect(client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: running.id })));
    expect(finalState(followed)).to.equal(TaskState.TASK_STATE_FAILED);
    const lost = await client.getTask(GetTaskRequest.fromJSON({ id: running.id }));
    const why = lost.status?.message?.parts[0]?.content;
    expect(why?.$case === 'text' ? why.value : '').to.match(/^lost: /);

    const added = await h.runCli(['user', 'add', 'bob', '--home', daemon.home]);
    expect(added.code, added.stderr).to.equal(0);
    const bob = await a2a(url, added.stdout.trim());
    let refused: unknown = null;
    await bob.getTask(GetTaskRequest.fromJSON({ id: running.id })).catch((err: unknown) => (refused = err));
    expect((refused as Error | null)?.constructor.name).to.match(/TaskNotFound/);

    const agentUrl = ((await (await fetch(`${url}/.well-known/agent-card.json`)).json()) as { supportedInterfaces: { url: string }[] }).supportedInterfaces[0]!.url;
    const legacy = await fetch(agentUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: { kind: 'message', messageId: 'legacy-1', role: 'user', parts: [{ kind: 'text', text: 'old names' }] } } }),
    });
    const answer = (await legacy.json()) as { result?: { kind: string; status: { state: string }; artifacts: { parts: { text: string }[] }[] } };
    expect(answer.result).to.deep.include({ kind: 'task' });
    expect(answer.result!.status.state).to.equal('completed');
    expect(answer.result!.artifacts[0]!.parts[0]!.text).to.equal('old names');
  });
});
