import { expect } from 'chai';
import { copyFileSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqliteReader } from '../../persistence/sqlite/sqlite-reader.js';
import { SCHEMA_VERSION } from '../../persistence/sqlite/schema.js';
import { SqliteStore, WAL_AUTOCHECKPOINT_PAGES } from '../../persistence/sqlite/sqlite-store.js';
import type { SessionRow } from '../../persistence/store-writer.js';

const row = (sid: string, _messages: number, historyVersion = 1, activate = true): SessionRow => ({
  sid,
  activate,
  sessionKey: `key-${sid}`,
  historyVersion,
  overridesText: '',
  cwd: null,
  bootId: 'boot-1',
  agent: 'script',
});

describe('store', () => {
  let dir: string;
  let store: SqliteStore;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'turnhost-store-'));
    store = SqliteStore.open(join(dir, 'turnhost.db'));
  });

  afterEach(() => {
    store.closeNow();
    rmSync(dir, { recursive: true, force: true });
  });

  it('upgrades a version-1 database in place: old messages read back without tool fields, new ones keep theirs', async () => {
    const file = join(dir, 'turnhost.db');
    await store.commit((w) => {
      w.saveSession(row('old', 1));
      w.appendMessages('old', 0, [{ role: 'user', content: 'from before' }], 't0');
    });
    store.closeNow();
    const raw = new Database(file);
    raw.exec('DROP TABLE content_chunks; DROP TABLE session_blobs; DROP TABLE blob_uploads; ALTER TABLE messages DROP COLUMN parts; DROP TABLE sweeps; DROP TABLE deleted_sessions; ALTER TABLE sessions DROP COLUMN archived_at; ALTER TABLE sessions DROP COLUMN pinned; DROP TABLE home_contents; DROP TABLE home_snapshots; DROP TABLE home_entries; ALTER TABLE sessions DROP COLUMN flat_workspace; ALTER TABLE sessions DROP COLUMN agent; ALTER TABLE turns DROP COLUMN trace; DROP INDEX turns_running_by; DROP TABLE usage_daily; DROP TABLE budgets; ALTER TABLE turns DROP COLUMN cached_tokens; ALTER TABLE turns DROP COLUMN reasoning_tokens');
    for (const column of ['messages.tool_calls', 'messages.tool_call_id', 'turns.model', 'turns.prompt_tokens', 'turns.completion_tokens', 'turns.model_calls']) {
      const [table, name] = column.split('.');
      raw.exec(`ALTER TABLE ${table} DROP COLUMN ${name}`);
    }
    raw.exec('DROP TABLE queue; DROP TABLE submits; ALTER TABLE sessions DROP COLUMN queue_revision; ALTER TABLE sessions DROP COLUMN agent_session_id');
    raw.exec('DROP TABLE users; DROP TABLE session_access; ALTER TABLE turns DROP COLUMN by_user; DROP TABLE schedules; DROP TABLE webhook_outbox; DROP TABLE webhook_deliveries; ALTER TABLE server_requests DROP COLUMN answered_by');
    raw.exec('DROP INDEX sessions_by_parent; DROP INDEX sessions_by_branch; DROP INDEX sessions_by_fork_source');
    for (const column of ['sessions.parent_sid', 'sessions.parent_upto', 'sessions.forked_from_sid', 'sessions.forked_from_turn', 'sessions.branch_of', 'turns.superseded_at', 'turns.superseded_by', 'turns.branch_sid']) {
      const [table, name] = column.split('.');
      raw.exec(`ALTER TABLE ${table} DROP COLUMN ${name}`);
    }
    raw.pragma('user_version = 1');
    raw.close();
    store = SqliteStore.open(file);
    expect(store.db.pragma('user_version', { simple: true })).to.equal(SCHEMA_VERSION);
    const call = { id: 'c1', type: 'function' as const, function: { name: 'f', arguments: '{}' } };
    await store.commit((w) => w.appendMessages('old', 1, [{ role: 'assistant', content: '', tool_calls: [call] }, { role: 'tool', content: 'r', tool_call_id: 'c1' }], 't1'));
    expect(store.messagesNow('old')).to.deep.equal([
      { role: 'user', content: 'from before' },
      { role: 'assistant', content: '', tool_calls: [call] },
      { role: 'tool', content: 'r', tool_call_id: 'c1' },
    ]);
    // Stored before workspaces belonged to people, without a folder of its own: it keeps `<root>/<sid>`.
    expect(await store.sessionWorkspace('old')).to.deep.equal({ owner: null, flat: true });
  });

  it('migrates a new database to the current schema version, in WAL mode', () => {
    expect(store.db.pragma('user_version', { simple: true })).to.equal(SCHEMA_VERSION);
    expect(store.db.pragma('journal_mode', { simple: true })).to.equal('wal');
    store.closeNow();
    store = SqliteStore.open(join(dir, 'turnhost.db'));
    expect(store.db.pragma('user_version', { simple: true })).to.equal(SCHEMA_VERSION);
  });

  it('refuses a database from a newer build', () => {
    store.db.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    store.closeNow();
    expect(() => SqliteStore.open(join(dir, 'turnhost.db'))).to.throw(/newer than this build/);
    store = SqliteStore.open(join(dir, 'other.db'));
  });

  it('groups the units queued in one turn into one transaction', async () => {
    const before = store.transactionsCommitted;
    const units = Array.from({ length: 20 }, (_, i) =>
      store.commit((w) => {
        w.saveSession(row(`s${i}`, 1));
        w.appendMessages(`s${i}`, 0, [{ role: 'user', content: `hi ${i}` }], `t${i}`);
      }),
    );
    await Promise.all(units);
    const sessions = store.db.prepare('SELECT count(*) AS n FROM sessions').get() as { n: number };
    expect(sessions.n).to.equal(20);
    expect(store.transactionsCommitted - before).to.equal(1);
    await store.commit((w) => w.saveSession(row('later', 0)));
    expect(store.transactionsCommitted - before).to.equal(2);
  });

  it('keeps the WAL bounded while writes never pause (checkpoints complete between commits)', async () => {
    const file = join(dir, 'turnhost.db');
    // The threshold plus one group: 64 messages, each on a leaf page and overflow pages, and the tree above.
    const walBound = (WAL_AUTOCHECKPOINT_PAGES + 512) * (4096 + 24);
    const content = 'x'.repeat(2000);
    let written = 0;
    let largest = 0;
    for (let group = 0; group < 800; group++) {
      await Promise.all(
        Array.from({ length: 64 }, (_, s) => store.commit((w) => w.appendMessages(`s${s}`, group, [{ role: 'user', content }], null))),
      );
      written += 64 * content.length;
      largest = Math.max(largest, statSync(`${file}-wal`).size);
    }
    expect(written).to.be.greaterThan(2 * walBound);
    expect(largest).to.be.at.most(walBound);
  });

  it('leaves everything in the database file on close, even while a reader is connected', async () => {
    const file = join(dir, 'turnhost.db');
    await store.commit((w) => {
      w.saveSession(row('s1', 1));
      w.appendMessages('s1', 0, [{ role: 'user', content: 'kept' }], 't1');
    });
    const reader = new Database(file, { readonly: true });
    expect(reader.prepare('SELECT count(*) AS n FROM messages').get()).to.deep.equal({ n: 1 }); // now attached to the WAL
    store.closeNow();
    store = SqliteStore.open(join(dir, 'other.db'));
    copyFileSync(file, join(dir, 'copy.db')); // the file alone, without its WAL
    reader.close();
    const copy = new Database(join(dir, 'copy.db'), { readonly: true });
    expect(copy.prepare('SELECT content FROM messages').all()).to.deep.equal([{ content: 'kept' }]);
    copy.close();
  });

  it('fails only the bad unit of a group, and commits the others', async () => {
    await store.commit((w) => w.startTurn('t1', 's1', 'r1', 'boot-1', null));
    const good = store.commit((w) => w.saveSession(row('good', 0)));
    const bad = store.commit((w) => w.startTurn('t1', 's1', 'r2', 'boot-1', null)); // duplicate turn id
    const alsoGood = store.commit((w) => w.saveSession(row('also-good', 0)));
    const results = await Promise.allSettled([good, bad, alsoGood]);
    expect(results.map((r) => r.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled']);
    expect(await store.loadSession('good')).to.not.equal(undefined);
    expect(await store.loadSession('also-good')).to.not.equal(undefined);
  });

  it('loads a session with its messages in order', async () => {
    await store.commit((w) => {
      w.saveSession(row('s1', 3, 4));
      w.appendMessages('s1', 0, [
        { role: 'user', content: 'a' },
        { role: 'assistant', content: 'b' },
        { role: 'user', content: 'c' },
      ], 't1');
    });
    const loaded = (await store.loadSession('s1'))!;
    expect(loaded.sessionKey).to.equal('key-s1');
    expect(loaded.status).to.equal('active');
    expect(loaded.historyVersion).to.equal(4);
    expect(loaded.messageCount).to.equal(3);
    expect(store.messagesNow('s1').map((m) => m.content)).to.deep.equal(['a', 'b', 'c']);
    expect(store.messagesNow('s1', 1, 2).map((m) => m.content)).to.deep.equal(['b']);
    expect(await store.loadSession('missing')).to.equal(undefined);
  });

  it('truncates a history from a position on', async () => {
    await store.commit((w) => {
      w.saveSession(row('s1', 3));
      w.appendMessages('s1', 0, [{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }, { role: 'user', content: 'c' }], null);
      w.truncateHistory('s1', 1);
    });
    expect(store.messagesNow('s1')).to.deep.equal([{ role: 'user', content: 'a' }]);
  });

  it('updates each session row once per group however many of its turns end in it, in the order the writes were asked for', async () => {
    // A temporary trigger counts the updates of the sessions table: the statements SQLite ran, not ours.
    store.db.exec('CREATE TEMP TABLE session_updates (n INTEGER); INSERT INTO session_updates VALUES (0)');
    store.db.exec('CREATE TEMP TRIGGER count_session_updates AFTER UPDATE ON sessions BEGIN UPDATE session_updates SET n = n + 1; END');
    const updates = () => (store.db.prepare('SELECT n FROM temp.session_updates').get() as { n: number }).n;
    const turns = 40;
    await store.commit((w) => ['a', 'b'].forEach((sid) => w.saveSession(row(sid, 0))));
    const before = updates();
    await Promise.all(
      Array.from({ length: turns }, (_, i) =>
        store.commit((w) => {
          const sid = i % 2 === 0 ? 'a' : 'b';
          const seq = Math.floor(i / 2) * 2;
          w.startTurn(`t${i}`, sid, `r${i}`, 'boot-1', null);
          w.appendMessages(sid, seq, [{ role: 'user', content: `q${i}` }, { role: 'assistant', content: `a${i}` }], `t${i}`);
          w.touchSession(sid, i + 1);
        }),
      ),
    );
    expect(updates() - before, 'one update of each session row for the whole group').to.equal(2);
    const raw = (sid: string) => (store.db.prepare('SELECT content FROM messages WHERE sid = ? ORDER BY seq').all(sid) as { content: string }[]).map((r) => r.content);
    expect(raw('a')).to.have.length(turns);
    expect(raw('a').slice(0, 4)).to.deep.equal(['q0', 'a0', 'q2', 'a2']);
    expect((store.db.prepare('SELECT count(*) AS n FROM turns').get() as { n: number }).n).to.equal(turns);
    expect((await store.loadSession('a'))!.historyVersion).to.equal(turns - 1);
    expect((await store.loadSession('b'))!.historyVersion).to.equal(turns);

    // A touch, then a save: the save's version stands.
    await store.commit((w) => {
      w.touchSession('a', 999);
      w.saveSession(row('a', 0, 5));
    });
    expect((await store.loadSession('a'))!.historyVersion).to.equal(5);
  });

  it('forgets the touch of a transaction that rolled back', async () => {
    await store.commit((w) => {
      w.saveSession(row('s1', 0, 1));
      w.startTurn('t1', 's1', 'r1', 'boot-1', null);
    });
    const bad = store.commit((w) => {
      w.touchSession('s1', 42);
      w.startTurn('t1', 's1', 'r2', 'boot-1', null); // a duplicate turn id
    });
    const good = store.commit((w) => w.saveSession(row('s2', 0)));
    const results = await Promise.allSettled([bad, good]);
    expect(results.map((r) => r.status)).to.deep.equal(['rejected', 'fulfilled']);
    await store.commit((w) => w.saveSession(row('s3', 0)));
    expect((await store.loadSession('s1'))!.historyVersion).to.equal(1);
  });

  it('finalizes and retains with their reasons; a later save does not reactivate a finalized row', async () => {
    store.commitNowSync((w) => {
      w.saveSession(row('f', 0));
      w.saveSession(row('r', 0));
      w.finalizeSession('f', 'compute_host_sigterm');
      w.retainSession('r', 'drain_deadline');
    }, { durable: true });
    store.commitNowSync((w) => w.saveSession(row('f', 0, 2, false)));
    expect(store.db.pragma('synchronous', { simple: true })).to.equal(1); // back to NORMAL after the durable commit
    const reader = SqliteReader.open(join(dir, 'turnhost.db'))!;
    const byId = Object.fromEntries((await reader.sessions()).map((s) => [s.session_id, s]));
    await reader.close();
    expect(byId['f']).to.include({ status: 'finalized', end_reason: 'compute_host_sigterm', retained_reason: null });
    expect(byId['f']).to.include({ history_version: 2 });
    expect(byId['r']).to.include({ status: 'retained', retained_reason: 'drain_deadline', end_reason: null });
    store.commitNowSync((w) => w.saveSession(row('r', 0, 2, true)));
    expect((await store.loadSession('r'))!.status).to.equal('active');
  });

  it('recovers after a boot that never ended: running turns lost, active sessions retained, open requests expired', async () => {
    store.commitNowSync((w) => {
      w.startBoot('dead', 111);
      w.saveSession(row('live', 1));
      w.startTurn('t-run', 'live', 'r1', 'dead', null, 1_000, '0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331--01');
      w.openRequest({ id: 'srq-000000000001', sid: 'live', turnId: 't-run', method: 'clarify.request', paramsText: '{}', bootId: 'dead' });
    });
    const counts = await store.recoverCrashedBoots();
    // The lost turns as their spans need them (PROTOCOL.md §5.8): the trace stored with their start.
    expect(counts).to.deep.equal({
      boots: 1,
      lostTurns: 1,
      retainedSessions: 1,
      expiredRequests: 1,
      lost: [{ turnId: 't-run', sid: 'live', agent: 'script', by: null, startedAt: 1_000, trace: '0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331--01' }],
    });
    expect(await store.retainedSessions()).to.deep.equal([{ sid: 'live', session_key: 'key-live', reason: 'crash' }]);
    const turn = store.db.prepare("SELECT status FROM turns WHERE turn_id = 't-run'").get() as { status: string };
    expect(turn.status).to.equal('lost');
    expect(await store.recoverCrashedBoots()).to.deep.equal({ boots: 0, lostTurns: 0, retainedSessions: 0, expiredRequests: 0, lost: [] });
  });

  it('is readable by a read-only reader while the writer holds it open', async () => {
    await store.commit((w) => {
      w.saveSession(row('s1', 1));
      w.appendMessages('s1', 0, [{ role: 'user', content: 'x' }], 't1');
    });
    const reader = SqliteReader.open(join(dir, 'turnhost.db'))!;
    const [entry, ...more] = (await reader.history('s1'))!;
    expect(more).to.deep.equal([]);
    expect(entry).to.deep.include({ seq: 0, role: 'user', content: 'x', turn_id: 't1', by: 'owner' });
    expect(Date.parse(entry!.at!), 'when it was stored').to.be.within(Date.now() - 60_000, Date.now());
    expect(await reader.history('nobody')).to.equal(undefined);
    expect(() => reader.db.prepare('DELETE FROM sessions').run()).to.throw(/readonly/);
    await reader.close();
    expect(SqliteReader.open(join(dir, 'absent.db'))).to.equal(null);
    new Database(join(dir, 'created-not-migrated.db')).close(); // what a host has made before it migrates
    expect(SqliteReader.open(join(dir, 'created-not-migrated.db'))).to.equal(null);
    expect(new Database(join(dir, 'turnhost.db'), { readonly: true }).prepare('SELECT 1 AS one').get()).to.deep.equal({ one: 1 });
  });
});
