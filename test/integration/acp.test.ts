// `turnhost acp` (PROTOCOL.md §7.2) driven by the ACP SDK's own client side, as an editor drives
// it: the test spawns `turnhost acp`, which starts a daemon in the test's home, and speaks ACP v1
// to it over its stdin and stdout.
import { expect } from 'chai';
import { join } from 'node:path';
import { TestClient } from '../helpers/daemon.js';
import { Editor } from '../helpers/editor.js';
import { Harness } from '../helpers/processes.js';

describe('turnhost acp: the ACP SDK\'s client side, as an editor', function () {
  this.timeout(60_000);
  const h = new Harness();
  afterEach(() => h.cleanup());

  const prompt = (editor: Editor, sessionId: string, text: string) => editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text }] });

  it('a prompt streams the reply and ends with end_turn; a permission granted, a clarify as a form, a tool call; stdout carries ACP alone', async () => {
    const home = h.tempDir();
    const editor = await Editor.start(h, home, { elicitation: { form: {} } }, {
      permission: (request) => ({ outcome: { outcome: 'selected', optionId: request.options.find((o) => o.kind === 'allow_once')!.optionId } }),
      elicit: () => ({ action: 'accept', content: { answer: 'green' } }),
    });
    const { sessionId } = await editor.agent.request('session/new', { cwd: home, mcpServers: [] });

    expect(await prompt(editor, sessionId, 'hello editor')).to.deep.equal({ stopReason: 'end_turn' });
    expect(editor.text('agent_message_chunk')).to.equal('hello editor');

    let mark = editor.updates.length;
    expect((await prompt(editor, sessionId, 'shipping\n/approve deploy to prod')).stopReason).to.equal('end_turn');
    expect(editor.permissions.map((p) => p.options.map((o) => o.kind))).to.deep.equal([['allow_once', 'reject_once']]);
    expect(editor.permissions[0]!.toolCall.title).to.equal('deploy to prod');
    expect(editor.text('agent_message_chunk', mark)).to.include('approved: deploy to prod');

    mark = editor.updates.length;
    await prompt(editor, sessionId, 'asking\n/ask favourite colour?');
    expect(editor.text('agent_message_chunk', mark)).to.include('answer: green');

    mark = editor.updates.length;
    await prompt(editor, sessionId, 'searching\n/tool grep 0.05');
    const tool = editor.updates.slice(mark).map((n) => n.update).filter((u) => u.sessionUpdate === 'tool_call' || u.sessionUpdate === 'tool_call_update');
    expect(tool.map((u) => [u.sessionUpdate, 'status' in u ? u.status : undefined])).to.deep.equal([
      ['tool_call', 'in_progress'],
      ['tool_call_update', 'completed'],
    ]);
    expect(new Set(tool.map((u) => ('toolCallId' in u ? u.toolCallId : null))).size).to.equal(1);

    const lines = editor.stdout.split('\n').filter((line) => line !== '');
    expect(lines.length).to.be.greaterThan(10);
    for (const line of lines) expect((JSON.parse(line) as { jsonrpc?: string }).jsonrpc, line).to.equal('2.0');
  });

  it('session/cancel stops the running turn: the prompt ends with cancelled; an editor without forms leaves a clarify unanswered', async () => {
    const home = h.tempDir();
    const editor = await Editor.start(h, home, {});
    const { sessionId } = await editor.agent.request('session/new', { cwd: home, mcpServers: [] });
    const running = prompt(editor, sessionId, 'long\n/sleep 30');
    await editor.until(() => editor.text('agent_message_chunk') === 'long', 'first reply chunk');
    await editor.agent.notify('session/cancel', { sessionId });
    expect(await running).to.deep.equal({ stopReason: 'cancelled' });
    const mark = editor.updates.length;
    await prompt(editor, sessionId, 'asking\n/ask anyone?');
    expect(editor.text('agent_message_chunk', mark)).to.include('answer: (none)');
  });

  it('an editor killed mid-turn loses nothing: the turn ends in the daemon, and the next editor\'s session/load replays all of it', async () => {
    const home = h.tempDir();
    const first = await Editor.start(h, home, {});
    const { sessionId } = await first.agent.request('session/new', { cwd: home, mcpServers: [] });
    void prompt(first, sessionId, 'first part\n/sleep 0.5\nsecond part').catch(() => {});
    await first.until(() => first.text('agent_message_chunk').includes('first'), 'the first chunk');
    first.child.kill('SIGKILL');
    const watcher = await TestClient.connect({ socket: join(home, 'turnhost.sock') });
    try {
      await watcher.call('session.resume', { session_id: sessionId, after_seq: 0 });
      await watcher.nextEvent('turn.end', sessionId);
    } finally {
      watcher.close();
    }
    const second = await Editor.start(h, home, {});
    expect(await second.agent.request('session/load', { sessionId, cwd: home, mcpServers: [] })).to.deep.equal({});
    expect(second.text('user_message_chunk')).to.equal('first part\n/sleep 0.5\nsecond part');
    expect(second.text('agent_message_chunk')).to.equal('first part\nsecond part');
    const missing = await second.agent.request('session/load', { sessionId: 'no-such-session', cwd: home, mcpServers: [] }).catch((err: unknown) => err);
    expect(missing).to.have.property('code', -32002);
  });
});
