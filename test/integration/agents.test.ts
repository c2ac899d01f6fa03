import { expect } from 'chai';
import { Harness } from '../helpers/processes.js';

describe('agents: --agent loading', () => {
  const h = new Harness();
  afterEach(() => h.cleanup());

  it("runs a user's module given by path", async () => {
    const host = await h.startHost(h.tempDir(), ['--agent', './test/fixtures/streaming-agent.mjs']);
    host.send({ type: 'turn.start', sid: 's1', request_id: 'r1', text: 'stream 2 1' });
    const end = await host.next('turn.end');
    // Its name in the catalogue (AGENT.md §8): a module's is its file's base name.
    expect(end['session_info']).to.include({ agent: 'streaming-agent' });
    expect(end['message_count']).to.equal(4);
  });

  it('exits 78 with one clear line for a missing module', async () => {
    const out = await h.runCli(['host', '--home', h.tempDir(), '--agent', './no/such/agent.js']);
    expect(out.code).to.equal(78);
    expect(out.stdout).to.equal('');
    expect(out.stderr.trim().split('\n')).to.have.length(1);
    expect(out.stderr).to.match(/agent module not found: .*no\/such\/agent\.js/);
  });

  it('exits 78 for a module that does not export an agent, and for an unknown built-in name', async () => {
    const notAgent = await h.runCli(['host', '--home', h.tempDir(), '--agent', './test/fixtures/not-an-agent.mjs']);
    expect(notAgent.code).to.equal(78);
    expect(notAgent.stderr).to.match(/does not export an agent/);
    const unknown = await h.runCli(['host', '--home', h.tempDir(), '--agent', 'gpt-9']);
    expect(unknown.code).to.equal(78);
    expect(unknown.stderr).to.match(/unknown agent "gpt-9"/);
  });
});
