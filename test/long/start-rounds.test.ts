// A long run (`npm run test:long`, in .ci/run), kept out of `npm test` for its 10-minute budget:
// `start` returns only once the host has said hello, so a prompt sent at once always runs; 20
// rounds of real daemons, to catch the race it once had.
import { join } from 'node:path';
import { expect } from 'chai';
import { TestClient } from '../helpers/daemon.js';
import { Harness } from '../helpers/processes.js';

describe('the client edge: readiness, many times over (real processes)', function () {
  this.timeout(120_000);
  const h = new Harness();
  afterEach(() => h.cleanup());

  it('20 rounds of `start` then an immediate prompt.submit: every one runs', async () => {
    const home = h.tempDir();
    for (let round = 1; round <= 20; round++) {
      const started = await h.runCli(['start', '--home', home]);
      expect(started.code, started.stderr).to.equal(0);
      const client = await TestClient.connect({ socket: join(home, 'turnhost.sock') });
      await client.call('session.create', { session_id: `r${round}` });
      const submitted = await client.call<{ status: string }>('prompt.submit', { session_id: `r${round}`, text: `round ${round}` });
      expect(submitted.status).to.equal('streaming');
      await client.nextEvent('turn.end', `r${round}`);
      client.close();
      const stopped = await h.runCli(['stop', '--home', home]);
      expect(stopped.code, stopped.stderr).to.equal(0);
    }
  });
});
