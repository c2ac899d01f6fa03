import { spawn } from 'node:child_process';
import { Readable, Writable } from 'node:stream';
import { mkdirSync, writeFileSync } from 'node:fs';
import { client, ndJsonStream, PROTOCOL_VERSION } from '@agentclientprotocol/sdk';
const home = '/tmp/gem/home'; mkdirSync(`${home}/.gemini`, { recursive: true });
const work = '/tmp/gem/work'; mkdirSync(work, { recursive: true });
writeFileSync(`${home}/.gemini/settings.json`, JSON.stringify({ privacy: { usageStatisticsEnabled: false }, telemetry: { enabled: false } }));
const child = spawn('/work/main/node_modules/.bin/gemini', ['--acp', '-m', 'gemini-2.5-flash'], { cwd: work, env: { PATH: process.env.PATH, HOME: home, GEMINI_CLI_NO_RELAUNCH: 'true', GOOGLE_GEMINI_BASE_URL: 'http://127.0.0.1:4598', GEMINI_API_KEY: 'k' }, stdio: ['pipe', 'pipe', 'inherit'] });
const app = client({ name: 'x' })
  .onNotification('session/update', ({ params }) => console.log('UPDATE', JSON.stringify(params.update).slice(0, 300)))
  .onRequest('session/request_permission', ({ params }) => { console.log('PERMISSION', JSON.stringify(params.options), JSON.stringify(params.toolCall).slice(0,300)); return { outcome: { outcome: 'selected', optionId: params.options.find(o => o.kind === 'allow_once').optionId } }; });
const conn = app.connect(ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout)));
const t0 = Date.now();
const init = await conn.agent.request('initialize', { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} });
console.log('INIT', Date.now() - t0, JSON.stringify(init).slice(0, 400));
const s = await conn.agent.request('session/new', { cwd: work, mcpServers: [] });
console.log('NEW', Date.now() - t0, s.sessionId);
const r = await conn.agent.request('session/prompt', { sessionId: s.sessionId, prompt: [{ type: 'text', text: 'make a file' }] });
console.log('STOP', Date.now() - t0, JSON.stringify(r));
child.kill(); process.exit(0);
