// The people of a PostgreSQL store (persistence/people.ts), on a small pool of their own: every
// node of a cluster reads the same users and shares.
import pg from 'pg';
import type { AccessRow, People, SessionRole, UserRow } from '../people.js';
import type { StoreLocation } from '../store-location.js';
import { clientConfig, described, readPool } from './connection.js';
import { migrate } from './schema.js';

export class PostgresPeople implements People {
  private constructor(private readonly pool: pg.Pool) {}

  static async open(location: Extract<StoreLocation, { kind: 'postgres' }>): Promise<PostgresPeople> {
    const client = new pg.Client(clientConfig(location, 'people'));
    try {
      await client.connect();
      await migrate(client);
    } catch (err) {
      throw described(err as Error);
    } finally {
      await client.end().catch(() => {});
    }
    return new PostgresPeople(readPool(location));
  }

  private async rows<R extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<pg.QueryResult<R>> {
    try {
      return await this.pool.query<R>(text, values);
    } catch (err) {
      throw described(err as Error);
    }
  }

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

  async close(): Promise<void> {
    await this.pool.end();
  }
}
