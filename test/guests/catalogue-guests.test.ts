// Claude Code (claude-code-acp) and Codex (codex-acp) as two agents of one catalogue (AGENT.md §8),
// offline against their fake model APIs: a session of each side by side on one daemon, each in its
// own sandbox with its own key, and each remembering its own conversation, not the other's, after
// a kill -9 of the host. Its own suite (`npm run test:guests`, run by .ci/run).
import { expect } from 'chai';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { EventParams } from '../../client/rpc-connection.js';
import { cliScene, type CliScene } from '../helpers/agent-clis.js';
import { claudeScene, conversationText, type ClaudeScene } from '../helpers/claude-code.js';
import { hostPid, hostReady, startDaemon, TestClient } from '../helpers/daemon.js';
import { Harness } from '../helpers/processes.js';
import { waitGone } from '../../persistence/proc.js';

const TURN_MS = 90_000;
const KEYS = { ANTHROPIC_API_KEY: 'sk-ant-catalogue-1', OPENAI_API_KEY: 'sk-catalogue-2' };

describe('Claude Code and Codex as two agents of one catalogue (AGENT.md §8)', function () {
  this.timeout(240_000);
  const h = new Harness();
  let claude: ClaudeScene | null = null;
  let codex: CliScene | null = null;
  afterEach(async () => {
    await h.cleanup();
    await claude?.fake.close();
    await codex?.close();
  });

  /** The scene's agent config, as a definition of the catalogue. */
  const definition = (file: string, label: string) => ({ kind: 'acp', label, ...(JSON.parse(readFileSync(file, 'utf8')) as object) });

  const ended = (client: TestClient, turnId: string) => () =>
    client.events.some((e) => (e.type === 'turn.end' || e.type === 'turn.error') && e.payload['turn_id'] === turnId);

  async function run(client: TestClient, sid: string, text: string): Promise<EventParams> {
    const { turn_id: turnId } = await client.call<{ turn_id: string }>('prompt.submit', { session_id: sid, text });
    await client.until(ended(client, turnId), `the end of "${text}" in ${sid}`, TURN_MS);
    return client.events.find((e) => (e.type === 'turn.end' || e.type === 'turn.error') && e.payload['turn_id'] === turnId)!;
  }

  it('a session of each side by side; after a kill -9 of the host each remembers its own words and not the other\'s', async () => {
    claude = await claudeScene(h);
    codex = await cliScene(h, 'codex');
    const file = join(claude.dir, 'catalogue.json');
    writeFileSync(
      file,
      JSON.stringify({
        default_agent: 'claude',
        agents: { claude: definition(claude.config, 'Claude Code'), codex: definition(codex.config, 'Codex') },
      }),
    );
    const daemon = await startDaemon(h, ['--agent-config', file], KEYS, claude.home);
    const client = await TestClient.connect(daemon);
    await client.call('session.create', { session_id: 'cc', cwd: claude.work });
    await client.call('session.create', { session_id: 'cx', agent: 'codex', cwd: codex.work });
    const listed = await client.call<{ sessions: { session_id: string; agent: string }[] }>('session.list');
    expect(Object.fromEntries(listed.sessions.map((s) => [s.session_id, s.agent]))).to.deep.equal({ cc: 'claude', cx: 'codex' });

    expect((await run(client, 'cc', 'remember the word PELICAN')).type).to.equal('turn.end');
    expect((await run(client, 'cx', 'remember the word OTTER')).type).to.equal('turn.end');
    await claude.transcriptHas('PELICAN', 10_000);

    const live = claude.processes();
    expect(live.length, 'both guests live, found by their homes under the daemon\'s').to.be.at.least(2);
    process.kill(await hostPid(client), 'SIGKILL');
    expect((await Promise.all(live.map((pid) => waitGone(pid, 5_000)))).every(Boolean), 'every guest gone within 5 s').to.equal(true);
    await hostReady(daemon, 2);

    const claudeAsked = claude.fake.conversations.length;
    const codexAsked = codex.conversations().length;
    expect((await run(client, 'cc', 'which word?')).type).to.equal('turn.end');
    expect((await run(client, 'cx', 'which word?')).type).to.equal('turn.end');
    const claudeSaw = claude.fake.conversations.slice(claudeAsked).map(conversationText).find((text) => text.includes('which word?'))!;
    const codexSaw = codex.conversations().slice(codexAsked).find((text) => text.includes('which word?'))!;
    expect(claudeSaw).to.include('PELICAN').and.not.include('OTTER');
    expect(codexSaw).to.include('OTTER').and.not.include('PELICAN');
  });
});
