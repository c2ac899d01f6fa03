// The host's history cache against the real store on a real SQLite file: after appends, a
// compression (truncate and rewrite in one transaction), an undone turn, a rolled-back
// transaction and a restart, what the cache serves is what the database holds; it stays within
// its bound, least recently used out.
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqliteStore } from '../../persistence/sqlite/sqlite-store.js';
import { toChatMessage, type MessageRow } from '../../persistence/store.js';
import type { ChatMessage } from '../../protocol/chat.js';

const session = (sid: string) => ({ sid, activate: true, sessionKey: sid, historyVersion: 1, overridesText: '', cwd: null, bootId: 'boot-1', agent: 'script' });
const say = (role: string, content: string): ChatMessage => ({ role, content });

describe('history cache (real store, real SQLite file)', () => {
  let dir: string;
  let file: string;
  let store: SqliteStore;
  let raw: Database.Database;

  /** The session's messages as the database holds them, read by a second connection. */
  const stored = (sid: string): ChatMessage[] =>
    (raw.prepare('SELECT role, content, tool_calls, tool_call_id, parts FROM messages WHERE sid = ? ORDER BY seq').all(sid) as MessageRow[]).map(toChatMessage);

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'turnhost-cache-'));
    file = join(dir, 'turnhost.db');
    store = SqliteStore.open(file);
    raw = new Database(file, { readonly: true });
  });

  afterEach(() => {
    raw.close();
    store.closeNow();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves a cached session without reading the database, and stays exact through appends, a compression, an undo and a rollback', async () => {
    await store.commit((w) => {
      w.saveSession(session('s1'));
      w.appendMessages('s1', 0, [say('user', 'one'), say('assistant', 'two')], 't1');
    });
    expect(store.messagesNow('s1')).to.deep.equal(stored('s1'));
    expect(store.history.sessions, 'the first read fills the cache').to.equal(1);

    await store.commit((w) => w.appendMessages('s1', 2, [say('user', 'three'), { role: 'assistant', content: '', tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }] }, { role: 'tool', content: 'r', tool_call_id: 'c' }], 't2'));
    // A read of a cached session does not touch the database: with the table renamed away, a read would fail.
    store.db.exec('ALTER TABLE messages RENAME TO messages_away');
    const served = store.messagesNow('s1', 0, 5);
    store.db.exec('ALTER TABLE messages_away RENAME TO messages');
    expect(served).to.deep.equal(stored('s1'));

    await store.commit((w) => {
      w.truncateHistory('s1', 0);
      w.appendMessages('s1', 0, [say('system', 'summary'), say('user', 'three')], null);
    });
    expect(store.messagesNow('s1')).to.deep.equal(stored('s1'));

    await store.commit((w) => w.appendMessages('s1', 2, [say('user', 'undone'), say('assistant', 'undone too')], 't3'));
    store.commitNowSync((w) => w.undoTurn('s1', 2, 't3', 'could not persist', {}));
    expect(store.messagesNow('s1')).to.deep.equal(stored('s1'));

    await store
      .commit((w) => {
        w.appendMessages('s1', 2, [say('user', 'rolled back')], 't4');
        throw new Error('the unit fails after writing');
      })
      .catch(() => {});
    expect(store.messagesNow('s1'), 'a rolled-back write never reaches the cache').to.deep.equal(stored('s1'));
    expect(store.messagesNow('s1').map((m) => m.content)).to.deep.equal(['summary', 'three']);
  });

  it('hands out messages an agent cannot change, and the same history after a restart', async () => {
    await store.commit((w) => {
      w.saveSession(session('s1'));
      w.appendMessages('s1', 0, [say('user', 'hello')], 't1');
    });
    const [fromDatabase] = store.messagesNow('s1');
    (fromDatabase as { content: string }).content = 'changed by an agent';
    const [fromCache] = store.messagesNow('s1');
    expect(fromCache!.content, 'the first read hands out a copy').to.equal('hello');
    expect(() => ((fromCache as { content: string }).content = 'changed')).to.throw(TypeError);
    expect(store.messagesNow('s1')[0]!.content).to.equal('hello');
    store.closeNow();
    store = SqliteStore.open(file);
    expect(store.messagesNow('s1')).to.deep.equal(stored('s1'));
  });

  it('stays within its bound in bytes, the least recently used session out', async () => {
    store.closeNow();
    store = SqliteStore.open(file, { historyCacheMib: 1 });
    const text = 'x'.repeat(100_000); // ~200 KB a message in UTF-16
    for (let i = 0; i < 10; i++) {
      await store.commit((w) => {
        w.saveSession(session(`s${i}`));
        w.appendMessages(`s${i}`, 0, [say('user', text)], null);
      });
      store.messagesNow(`s${i}`);
    }
    expect(store.history.bytes).to.be.at.most(1024 * 1024);
    expect(store.history.sessions).to.be.within(1, 5);
    expect(store.messagesNow('s9')[0]!.content).to.equal(text);
    expect(store.messagesNow('s0')[0]!.content, 'an evicted session is read again').to.equal(text);
  });
});
