// turnhost's agents as MCP tools (PROTOCOL.md §7.4), against a real daemon's edge, with the MCP
// SDK's own client over streamable HTTP: run, result, answer, sessions and cancel on the script
// agent; a turn longer than wait_s polled; its reply as progress; a question answered; a turn
// lost under a kill -9 of its host; a member who may not see another's session.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { expect } from 'chai';
import { hostPid, startEdgeDaemon, TestClient } from '../helpers/daemon.js';
import { Harness } from '../helpers/processes.js';

const TOKEN = 'mcp-door-token-0123456789abcdef0123';

interface Called {
  text: string;
  isError: boolean;
  structured: Record<string, unknown>;
}

describe('MCP: turnhost\'s agents as tools (real daemon, the MCP SDK\'s client)', function () {
  this.timeout(60_000);
  const h = new Harness();
  const clients: Client[] = [];
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => client.close()));
    await h.cleanup();
  });

  const edge = () => startEdgeDaemon(h, TOKEN);


  async function mcp(url: string, token = TOKEN): Promise<Client> {
    const client = new Client({ name: 'turnhost-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
    clients.push(client);
    return client;
  }

  async function call(client: Client, name: string, args: Record<string, unknown>, onProgress?: (message: string) => void): Promise<Called> {
    const result = await client.callTool({ name, arguments: args }, undefined, onProgress === undefined ? {} : { onprogress: (p) => onProgress(p.message ?? ''), resetTimeoutOnProgress: true });
    const content = result.content as { type: string; text?: string }[];
    return { text: content.map((c) => c.text ?? '').join(''), isError: result.isError === true, structured: (result.structuredContent ?? {}) as Record<string, unknown> };
  }

  it('lists five tools with output schemas; run answers the reply of a short turn, streamed as progress', async () => {
    const { url } = await edge();
    const client = await mcp(url);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).to.deep.equal(['answer', 'cancel', 'result', 'run', 'sessions']);
    expect(tools.find((t) => t.name === 'run')!.outputSchema).to.have.nested.property('properties.status');
    const progress: string[] = [];
    const ran = await call(client, 'run', { prompt: 'hello from an agent' }, (message) => progress.push(message));
    expect(ran.isError).to.equal(false);
    expect(ran.text).to.equal('hello from an agent');
    expect(ran.structured).to.deep.include({ status: 'completed' });
    expect(progress.join('')).to.equal('hello from an agent');
    const { sessions } = (await call(client, 'sessions', {})).structured as { sessions: { session_id: string }[] };
    expect(sessions.map((s) => s.session_id)).to.include(ran.structured['session_id']);
    const metrics = await (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
    expect(metrics).to.include('turnhost_door_calls_total{door="mcp",method="tools/call:run"} 1');
    expect(metrics).to.include('turnhost_door_calls_total{door="mcp",method="tools/call:sessions"} 1');
  });

  it('a turn longer than wait_s answers running, and result gives its reply when it ends; cancel interrupts another', async () => {
    const { url } = await edge();
    const client = await mcp(url);
    const started = await call(client, 'run', { prompt: 'slow\n/sleep 2\nreply', wait_s: 0.2 });
    expect(started.structured).to.deep.include({ status: 'running' });
    const { session_id, turn_id } = started.structured as { session_id: string; turn_id: string };
    const asked = Date.now();
    const polled = await call(client, 'result', { session_id, turn_id, wait_s: 20 });
    expect(Date.now() - asked, 'answered when the turn ended (about 2 s), not at wait_s').to.be.below(10_000);
    expect(polled).to.deep.include({ text: 'slow\nreply', isError: false });
    expect(polled.structured).to.deep.include({ status: 'completed', session_id, turn_id });
    expect((await call(client, 'result', { session_id, turn_id })).text, 'a finished turn is read back').to.equal('slow\nreply');

    const long = await call(client, 'run', { prompt: '/sleep 30', wait_s: 0 });
    const cancelled = await call(client, 'cancel', { session_id: long.structured['session_id'] });
    expect(cancelled.structured).to.deep.equal({ session_id: long.structured['session_id'], interrupted: true });
    expect((await call(client, 'result', { ...long.structured, wait_s: 20 })).structured).to.deep.include({ status: 'canceled' });
  });

  it('a question is input_required with its request_id; answer answers it (a clarify, then an approval denied)', async () => {
    const { url } = await edge();
    const client = await mcp(url);
    const asked = await call(client, 'run', { prompt: '/ask which colour?\n/approve paint it' });
    expect(asked.structured).to.deep.include({ status: 'input_required' });
    expect(asked.text).to.include('which colour?');
    const { session_id, turn_id } = asked.structured as { session_id: string; turn_id: string };
    const approval = await call(client, 'answer', { session_id, turn_id, request_id: asked.structured['request_id'], answer: 'teal' });
    expect(approval.structured).to.deep.include({ status: 'input_required' });
    expect(approval.structured['question']).to.deep.include({ method: 'approval.request' });
    const done = await call(client, 'answer', { session_id, turn_id, request_id: approval.structured['request_id'], answer: 'no' });
    expect(done.structured).to.deep.include({ status: 'completed' });
    expect(done.text).to.equal('answer: teal\ndenied: paint it');
    const again = await call(client, 'answer', { session_id, turn_id, request_id: approval.structured['request_id'], answer: 'yes' });
    expect(again.isError).to.equal(true);
    expect(again.text).to.include('no open question');
  });

  it('a turn whose host is killed -9 reads failed with reason lost; another person sees neither the session nor its turn', async () => {
    const { daemon, url } = await edge();
    const client = await mcp(url);
    const running = await call(client, 'run', { prompt: '/sleep 30', wait_s: 0.2 });
    const socket = await TestClient.connect(daemon);
    process.kill(await hostPid(socket), 'SIGKILL');
    const lost = await call(client, 'result', { ...running.structured, wait_s: 20 });
    expect(lost.isError).to.equal(true);
    expect(lost.structured).to.deep.include({ status: 'failed', reason: 'lost' });

    const added = await h.runCli(['user', 'add', 'bob', '--home', daemon.home]);
    expect(added.code, added.stderr).to.equal(0);
    const bob = await mcp(url, added.stdout.trim());
    const refused = await call(bob, 'result', { session_id: running.structured['session_id'], turn_id: running.structured['turn_id'] });
    expect(refused.isError).to.equal(true);
    expect(refused.text).to.match(/not found/);
    expect((await call(bob, 'sessions', {})).structured).to.deep.equal({ sessions: [] });
  });
});
