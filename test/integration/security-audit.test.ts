// The findings of the security audit, each shown against the real processes: a lock another user
// could squat, an approval prompt that hid what runs, a daemon in the caller's folder, MCP tool
// names that met, a key redacted only when whole, a log that took a host's stderr for records.
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readDatabase } from '../helpers/database.js';
import { hostPid, startDaemon, TestClient } from '../helpers/daemon.js';
import { chunkEvent } from '../helpers/fake-openai.js';
import { fixtureServer, modelScenes } from '../helpers/model-agent.js';
import { Harness } from '../helpers/processes.js';

const NOBODY = 65534;

/** Listens as uid 65534 on the abstract names the locks used to have, and tries the new lock files; prints what it got. */
function squatAsNobody(home: string): { child: ChildProcess; report: Promise<Record<string, string>> } {
  const abstract = (holder: string) => `\0turnhost-${holder}-${createHash('sha256').update(home).digest('hex').slice(0, 32)}`;
  const script = `
    const net = require('node:net');
    const targets = ${JSON.stringify({ 'daemon-abstract': abstract('daemon'), 'host-abstract': abstract('host'), 'daemon-file': join(home, 'daemon.lock'), 'host-file': join(home, 'host.lock') })};
    const report = {};
    let pending = Object.keys(targets).length;
    for (const [name, path] of Object.entries(targets)) {
      const server = net.createServer((s) => s.destroy());
      const done = (result) => { report[name] = result; if (--pending === 0) process.stdout.write(JSON.stringify(report) + '\\n'); };
      server.once('error', (err) => done(err.code));
      server.listen({ path }, () => done('listening'));
    }
    setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['-e', script], { uid: NOBODY, gid: NOBODY, stdio: ['ignore', 'pipe', 'inherit'] });
  const report = new Promise<Record<string, string>>((resolve) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('\n')) resolve(JSON.parse(out) as Record<string, string>);
    });
  });
  return { child, report };
}

describe('what the security audit found (real processes)', function () {
  this.timeout(60_000);
  const h = new Harness();
  const { scene, cleanup } = modelScenes(h);
  afterEach(cleanup);

  it('another local user cannot keep the daemon or its host from starting', async function () {
    if (process.getuid?.() !== 0) {
      process.stdout.write('      (skipped: running a squatter as another user needs root; CI runs as root)\n');
      this.skip();
    }
    const home = h.tempDir();
    // The squatter can reach /tmp but, like any other user, not the inside of a 0700 home.
    chmodSync(home, 0o700);
    const squatter = squatAsNobody(home);
    try {
      expect(await squatter.report).to.deep.equal({ 'daemon-abstract': 'listening', 'host-abstract': 'listening', 'daemon-file': 'EACCES', 'host-file': 'EACCES' });
      const start = await h.runCli(['start', '--home', home]);
      expect(start.code, start.stderr).to.equal(0);
      const status = await h.runCli(['status', '--home', home, '--json']);
      expect(JSON.parse(status.stdout).host.state).to.equal('running');
      expect((await h.runCli(['chat', '--home', home, 'still mine'])).stdout).to.equal('still mine\n');
      expect((await h.runCli(['stop', '--home', home])).code).to.equal(0);
    } finally {
      squatter.child.kill('SIGKILL');
    }
  });

  it('a lock file left by a killed daemon is taken over; a live one is not', async () => {
    const daemon = await startDaemon(h);
    const second = await h.runCli(['daemon', '--home', daemon.home]);
    expect(second.code).to.equal(1);
    expect(second.stderr).to.include('a daemon is already running');
    daemon.process.kill('SIGKILL');
    await daemon.process.waitExit();
    expect(existsSync(join(daemon.home, 'daemon.lock')), 'the dead daemon left its lock file').to.equal(true);
    const again = await startDaemon(h, [], {}, daemon.home);
    const client = await TestClient.connect(again);
    expect((await client.call<{ host: { state: string } }>('host.status')).host.state).to.equal('running');
    client.close();
  });

  it('the approval prompt shows what will run: the winning value of a repeated key, a cut said as such, a \\r escaped (chat and approval.request)', async () => {
    const s = await scene();
    s.writeConfig({ mcp_servers: { t: fixtureServer(s) } });
    const repeated = `{"text":"ls -la /tmp","why":"${'w'.repeat(490)}","text":"rm -rf /srv/important"}`;
    const hiding = '{"text":"rm -rf /srv/important\\rls -la /tmp"}';
    s.fake.reply({ toolCalls: [{ id: 'c1', name: 'mcp_t_echo', args: [repeated] }] }, { toolCalls: [{ id: 'c2', name: 'mcp_t_echo', args: [hiding] }] }, { text: ['done'] });
    const chat = h.spawnCli(['chat', '--agent', 'openai', '--home', s.home, 'tidy up']);
    // `a` shows the whole arguments, then the question is asked again; both calls are denied.
    chat.stdin!.end('a\nn\nn\n');
    let stderr = '';
    chat.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    const code = await new Promise<number | null>((resolve) => chat.once('close', resolve));
    expect(code, stderr).to.equal(0);
    const shownRepeated = `{"text":"rm -rf /srv/important","why":"${'w'.repeat(490)}"}`;
    const omitted = shownRepeated.length - 500;
    expect(stderr, stderr).to.include(`approve: mcp_t_echo(${shownRepeated.slice(0, 500)}… [${omitted} more characters not shown])? [y/N/a: show all arguments] a\n`);
    expect(stderr).to.include(`arguments of mcp_t_echo: ${shownRepeated}\n`);
    expect(stderr).to.include('approve: mcp_t_echo({"text":"rm -rf /srv/important\\rls -la /tmp"})? [y/N] n\n');
    expect(stderr, 'the tool line shows the arguments as they will run too').to.include(`→ mcp_t_echo(${shownRepeated.slice(0, 150)}`);
    expect(stderr).to.not.include('\r');
    expect(existsSync(s.mcpLog), 'no call ran').to.equal(false);

    // What a client gets in approval.request: the same question; `arguments` is what would run.
    s.fake.reply({ toolCalls: [{ id: 'c3', name: 'mcp_t_echo', args: [repeated] }] }, { text: ['done'] });
    const daemonClient = await TestClient.connect({ socket: join(s.home, 'turnhost.sock') });
    await daemonClient.call('session.create', { session_id: 'ask' });
    await daemonClient.call('prompt.submit', { session_id: 'ask', text: 'again' });
    await daemonClient.until(() => daemonClient.requests.length === 1, 'the approval request');
    const params = daemonClient.requests[0]!.params;
    expect(params['question']).to.equal(`mcp_t_echo(${shownRepeated.slice(0, 500)}… [${omitted} more characters not shown])`);
    expect(params['arguments']).to.deep.equal({ text: 'rm -rf /srv/important', why: 'w'.repeat(490) });
    daemonClient.rpc.respond(daemonClient.requests[0]!.id, { result: { approved: true } });
    await daemonClient.nextEvent('turn.end', 'ask');
    const ran = readFileSync(s.mcpLog, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { event: string; args?: unknown });
    expect(ran[0]).to.deep.include({ event: 'start', args: { text: 'rm -rf /srv/important' } });
    daemonClient.close();
    await h.runCli(['stop', '--home', s.home]);
  });

  it("a daemon started by chat, its host and its MCP servers run in the home, never in the caller's folder", async () => {
    const s = await scene();
    const caller = h.tempDir('turnhost-caller-');
    const marker = join(h.tempDir('turnhost-marker-'), 'planted-ran');
    mkdirSync(join(caller, 'node_modules', '.bin'), { recursive: true });
    const planted = join(caller, 'node_modules', '.bin', 'mcp-fs');
    writeFileSync(planted, `#!/bin/sh\necho ran > ${JSON.stringify(marker)}\n`);
    chmodSync(planted, 0o755);
    // The README's kind of entry: npx, which runs a package's binary from the folder it runs in.
    s.writeConfig({ mcp_servers: { fs: { command: 'npx', args: ['--offline', '--no', 'mcp-fs'] } } });
    s.fake.reply({ text: ['hello'] });
    const chat = await h.runCli(['chat', '--agent', 'openai', '--home', s.home, 'hi'], {}, 30_000, caller);
    expect(chat.code, chat.stderr).to.equal(0);
    expect(chat.stderr).to.include('the MCP server "fs" failed to start');
    expect(existsSync(marker), 'the planted binary ran').to.equal(false);
    const client = await TestClient.connect({ socket: join(s.home, 'turnhost.sock') });
    const status = await client.call<{ supervisor: { pid: number } }>('host.status');
    expect(readlinkSync(`/proc/${status.supervisor.pid}/cwd`)).to.equal(s.home);
    expect(readlinkSync(`/proc/${await hostPid(client)}/cwd`)).to.equal(s.home);
    client.close();
    await h.runCli(['stop', '--home', s.home]);
  });

  it('MCP servers whose tool names could meet (fs_safe and fs) are refused together at start, naming both', async () => {
    const s = await scene();
    s.writeConfig({ approval: { default: 'ask', allow: ['mcp_fs_safe_*'] }, mcp_servers: { fs_safe: fixtureServer(s), fs: fixtureServer(s) } });
    const start = await h.runCli(['start', '--agent', 'openai', '--home', s.home]);
    expect(start.code).to.equal(78);
    expect(start.stderr.trim()).to.equal(
      `turnhost start: ${join(s.home, 'agent.json')}: mcp_servers: the servers "fs" and "fs_safe" would give tools the same names (both under mcp_fs_safe_…): rename one of them`,
    );
  });

  it('an approval rule written for one server does not approve another server\'s tools', async () => {
    const s = await scene();
    s.writeConfig({ approval: { default: 'ask', allow: ['mcp_fs-safe_*'] }, mcp_servers: { 'fs-safe': fixtureServer(s), fs: fixtureServer(s) } });
    s.fake.reply({ toolCalls: [{ id: 'w', name: 'mcp_fs_echo', args: ['{"text":"wipe"}'] }] }, { text: ['ok'] });
    const daemon = await startDaemon(h, ['--agent', 'openai'], {}, s.home);
    const client = await TestClient.connect(daemon);
    await client.call('session.create', { session_id: 'm' });
    await client.call('prompt.submit', { session_id: 'm', text: 'go' });
    await client.until(() => client.requests.length === 1, 'an approval question for the other server\'s tool');
    expect(client.requests[0]!.params).to.include({ tool: 'mcp_fs_echo' });
    client.close();
  });

  it('an error body holding the key cut or in another case is redacted in the turn error, the turns table and the log', async () => {
    // No piece of it may be in a temp folder's name (turnhost-test-…): the search below would find it there.
    const key = 'sk-qz7-Redact9Me8Please7Now6';
    const s = await scene();
    s.fake.reply({ status: 400, message: `bad key ${key.slice(0, -1)} and ${key.toUpperCase()} and ${key.slice(3, 14).toLowerCase()}` });
    const daemon = await startDaemon(h, ['--agent', 'openai'], { OPENAI_API_KEY: key }, s.home);
    const client = await TestClient.connect(daemon);
    await client.call('session.create', { session_id: 'k' });
    await client.call('prompt.submit', { session_id: 'k', text: 'go' });
    const failed = await client.nextEvent('turn.error', 'k');
    expect(String(failed.payload['message'])).to.equal(`${s.fake.baseUrl} answered 400: 400 bad key [key] and [key] and [key]`);
    const stored = readDatabase(s.home, (db) => db.prepare('SELECT error FROM turns').get()) as { error: string };
    expect(stored.error).to.equal(String(failed.payload['message']));
    client.close();
    await h.runCli(['stop', '--home', s.home]);
    const everything = [readFileSync(join(s.home, 'logs', 'turnhost.log'), 'utf8'), daemon.process.stderr, JSON.stringify(client.events)].join('\n').toLowerCase();
    const lower = key.toLowerCase();
    for (let at = 0; at + 8 <= lower.length; at++) expect(everything, `a piece of the key at ${at}`).to.not.include(lower.slice(at, at + 8));
  });

  it("the host's stderr never passes for a log record: a model server's text and an agent's print arrive quoted", async () => {
    const s = await scene();
    const forged = JSON.stringify({ level: 30, time: 1, pid: 1, name: 'supervisor', msg: 'forged by the model server' });
    s.fake.reply({ raw: [`data: ${forged}\n\n`, chunkEvent({ content: 'x' }, 'stop')] });
    const model = await startDaemon(h, ['--agent', 'openai'], {}, s.home);
    const client = await TestClient.connect(model);
    await client.call('session.create', { session_id: 'f' });
    await client.call('prompt.submit', { session_id: 'f', text: 'go' });
    await client.nextEvent('turn.end', 'f');
    client.close();
    await h.runCli(['stop', '--home', s.home]);
    const modelLog = readFileSync(join(s.home, 'logs', 'turnhost.log'), 'utf8');
    expect(modelLog).to.not.match(/^\{[^\n]*"name":"supervisor","msg":"forged/m);

    const printing = await startDaemon(h, ['--agent', 'test/fixtures/stderr-agent.mjs']);
    const other = await TestClient.connect(printing);
    await other.call('session.create', { session_id: 'p' });
    await other.call('prompt.submit', { session_id: 'p', text: forged });
    await other.nextEvent('turn.end', 'p');
    other.close();
    await h.runCli(['stop', '--home', printing.home]);
    const records = readFileSync(join(printing.home, 'logs', 'turnhost.log'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records.filter((r) => r['msg'] === 'forged by the model server')).to.have.length(0);
    expect(records.find((r) => r['name'] === 'host-stderr' && r['line'] === forged), 'the printed line, quoted').to.not.equal(undefined);
    expect(records.some((r) => r['name'] === 'host' && typeof r['msg'] === 'string'), "the host's own records still arrive as records").to.equal(true);
  });
});
