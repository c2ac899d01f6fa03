// The people of a SQLite home (persistence/people.ts), on the side connection (sqlite-side.ts).
import type Database from 'better-sqlite3';
import type { AccessRow, People, SessionRole, UserRow } from '../people.js';

export class SqlitePeople implements People {
  constructor(private readonly db: Database.Database) {}

  async users(): Promise<UserRow[]> {
    const rows = this.db.prepare('SELECT name, admin, token_sha256, created_at, last_seen_at FROM users ORDER BY name').all() as (Omit<UserRow, 'admin'> & { admin: number })[];
    return rows.map((row) => ({ ...row, admin: row.admin === 1 }));
  }

  async addUser(user: Omit<UserRow, 'last_seen_at'>): Promise<boolean> {
    const added = this.db
      .prepare('INSERT INTO users (name, admin, token_sha256, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (name) DO NOTHING')
      .run(user.name, user.admin ? 1 : 0, user.token_sha256, user.created_at);
    return added.changes === 1;
  }

  async removeUser(name: string): Promise<boolean> {
    return this.db.prepare('DELETE FROM users WHERE name = ?').run(name).changes === 1;
  }

  async touchUser(name: string, at: number): Promise<void> {
    this.db.prepare('UPDATE users SET last_seen_at = ? WHERE name = ?').run(at, name);
  }

  async accessOf(sid: string): Promise<AccessRow[]> {
    return this.db.prepare('SELECT user_name, role FROM session_access WHERE sid = ?').all(sid) as AccessRow[];
  }

  async sessionsOf(user: string): Promise<{ sid: string; role: SessionRole }[]> {
    return this.db.prepare('SELECT sid, role FROM session_access WHERE user_name = ?').all(user) as { sid: string; role: SessionRole }[];
  }

  async grant(sid: string, user: string, role: SessionRole): Promise<void> {
    this.db.prepare('INSERT INTO session_access (sid, user_name, role) VALUES (?, ?, ?) ON CONFLICT (sid, user_name) DO UPDATE SET role = excluded.role').run(sid, user, role);
  }

  async revoke(sid: string, user: string): Promise<boolean> {
    return this.db.prepare("DELETE FROM session_access WHERE sid = ? AND user_name = ? AND role <> 'owner'").run(sid, user).changes === 1;
  }
}
