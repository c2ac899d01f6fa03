// The long runs (`npm run test:long`, in .ci/run, and the fault injection again in the PostgreSQL
// matrix): many rounds of real processes killed or started, kept out of `npm test` for its
// 10-minute budget. Fault injection: 20 rounds of turns cut by SIGKILL at seeded moments.
import { expect } from 'chai';
import { storeRows, TEST_STORE } from '../helpers/test-store.js';
import { Harness, type HostProcess } from '../helpers/processes.js';
import { seededRandom } from '../helpers/random.js';

/** SQLite's own check of its file after a kill; PostgreSQL's transactions need none. */
async function expectIntact(home: string, context: string): Promise<void> {
  if (TEST_STORE === 'sqlite') expect(await storeRows(home, 'PRAGMA integrity_check'), context).to.deep.equal([{ integrity_check: 'ok' }]);
}

describe('recovery after a crash, many times over (real host processes)', function () {
  this.timeout(120_000);
  const h = new Harness();
  afterEach(() => h.cleanup());

  it('fault injection: 20 rounds of turns cut by SIGKILL lose no finished turn and finalize no session twice (seeded)', async () => {
    const seed = Number(process.env['TURNHOST_FAULT_SEED'] ?? 20261129);
    const random = seededRandom(seed);
    const context = `seed ${seed} (rerun with TURNHOST_FAULT_SEED=${seed})`;
    const home = h.tempDir();
    const sids = Array.from({ length: 20 }, (_, i) => `f${i}`);
    const ended = new Map<string, string>(); // turn_id → sid, for every turn.end read
    let running: string[] = []; // turn_ids started but not ended when the last host died
    let known = new Set<string>();
    /** After a restart: what the dead host left running is lost, and no session was finalized. */
    const checkRecovered = async (host: HostProcess, round: number): Promise<void> => {
      const recovered = (host.frames[0]!['recovered'] as { sid: string; reason: string }[]).map((r) => r.sid).sort();
      expect(recovered, `${context}, round ${round}: every session not finalized is recovered`).to.deep.equal([...known].sort());
      for (const turnId of running) {
        expect(await storeRows(home, 'SELECT status FROM turns WHERE turn_id = ?', [turnId]), `${context}: ${turnId}`).to.deep.equal([{ status: 'lost' }]);
      }
      expect(await storeRows(home, "SELECT count(*) AS n FROM sessions WHERE status = 'finalized'"), context).to.deep.equal([{ n: 0 }]);
    };
    for (let round = 0; round < 20; round++) {
      const host = await h.startHost(home, ['--workers', '20']);
      await checkRecovered(host, round);
      const started = new Map<string, string>(); // turn_id → request_id
      for (const sid of sids) {
        const seconds = (random() * 0.2).toFixed(3);
        host.send({ type: 'turn.start', sid, request_id: `${round}-${sid}`, text: `round ${round}\n/sleep ${seconds}` });
      }
      await new Promise((resolve) => setTimeout(resolve, 30 + random() * 250));
      host.kill('SIGKILL');
      await host.waitExit();
      for (const f of host.all('turn.started')) started.set(String(f['turn_id']), String(f['request_id']));
      for (const f of host.all('turn.end')) ended.set(String(f['turn_id']), String(f['sid']));
      known = new Set([...known, ...host.all('turn.started').map((f) => String(f['sid']))]);
      for (const [turnId, sid] of ended) {
        const rows = await storeRows<{ role: string }>(home, 'SELECT role, content FROM messages WHERE sid = ? AND turn_id = ? ORDER BY seq', [sid, turnId]);
        expect(rows.map((r) => r.role), `${context}: turn ${turnId} was ended and must be whole`).to.deep.equal(['user', 'assistant']);
      }
      // A turn whose turn.end was not read may still have committed its end (the host died
      // between the commit and the write); either way it is stored as running or completed.
      for (const turnId of [...started.keys()].filter((t) => !ended.has(t))) {
        const [row] = await storeRows<{ status: string }>(home, 'SELECT status FROM turns WHERE turn_id = ?', [turnId]);
        expect(['running', 'completed'], `${context}: turn ${turnId}`).to.include(row!.status);
      }
      running = (await storeRows<{ turn_id: string }>(home, "SELECT turn_id FROM turns WHERE status = 'running'")).map((r) => r.turn_id);
      await expectIntact(home, context);
    }
    const last = await h.startHost(home, ['--workers', '20']);
    await checkRecovered(last, 20);
    // Every session comes back on first use; a clean stop finalizes each exactly once.
    for (const sid of known) last.send({ type: 'turn.start', sid, request_id: `last-${sid}`, text: 'back' });
    for (const sid of known) await last.next('turn.end', { where: (f) => f['sid'] === sid });
    last.send({ type: 'shutdown', request_id: 'end', wait: 1 });
    const finalized = (await last.next('shutdown.ack'))['finalized'] as string[];
    expect(finalized.slice().sort(), `${context}: each session finalized once`).to.deep.equal([...known].sort());
    expect((await last.waitExit()).code).to.equal(0);
    const rows = await storeRows(home, 'SELECT status, end_reason, count(*) AS n FROM sessions GROUP BY status, end_reason');
    expect(rows, context).to.deep.equal([{ status: 'finalized', end_reason: 'compute_host_shutdown', n: known.size }]);
    await expectIntact(home, context);
  });
});
