// The people of a PostgreSQL store (persistence/people.ts), on the side pool (postgres-side.ts):
// every node of a cluster reads the same users and shares.
import type { AccessRow, People, SessionRole, UserRow } from '../people.js';
import type { SideQuery } from './side-query.js';

export class PostgresPeople implements People {
  constructor(private readonly rows: SideQuery) {}

  async users(): Promise<UserRow[]> {
    return (await this.rows<UserRow>('SELECT name, admin, token_sha256, created_at, last_seen_at FROM users ORDER BY name')).rows;
  }

  async addUser(user: Omit<UserRow, 'last_seen_at'>): Promise<boolean> {
    const added = await this.rows('INSERT INTO users (name, admin, token_sha256, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (name) DO NOTHING', [user.name, user.admin, user.token_sha256, user.created_at]);
    return added.rowCount === 1;
  }

  async removeUser(name: string): Promise<boolean> {
    return (await this.rows('DELETE FROM users WHERE name = $1', [name])).rowCount === 1;
  }

  async touchUser(name: string, at: number): Promise<void> {
    await this.rows('UPDATE users SET last_seen_at = $1 WHERE name = $2', [at, name]);
  }

  async accessOf(sid: string): Promise<AccessRow[]> {
    return (await this.rows<AccessRow>('SELECT user_name, role FROM session_access WHERE sid = $1', [sid])).rows;
  }

  async sessionsOf(user: string): Promise<{ sid: string; role: SessionRole }[]> {
    return (await this.rows<{ sid: string; role: SessionRole }>('SELECT sid, role FROM session_access WHERE user_name = $1', [user])).rows;
  }

  async grant(sid: string, user: string, role: SessionRole): Promise<void> {
    await this.rows('INSERT INTO session_access (sid, user_name, role) VALUES ($1, $2, $3) ON CONFLICT (sid, user_name) DO UPDATE SET role = excluded.role', [sid, user, role]);
  }

  async revoke(sid: string, user: string): Promise<boolean> {
    return (await this.rows("DELETE FROM session_access WHERE sid = $1 AND user_name = $2 AND role <> 'owner'", [sid, user])).rowCount === 1;
  }
}
