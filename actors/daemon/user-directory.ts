// The users of personal tokens as the store has them, looked at every second (PROTOCOL.md §5.6):
// a known token is a lookup of its digest, with no read on a request's path; an unknown one waits for
// a read of the users begun after it came (one read at a time, however many unknown tokens arrive:
// guessing cannot flood the store), so a user made a moment ago gets in at once. A user removed on any node is unknown here within a
// second, and the connections their tokens opened are closed with it.
import type { Logger } from 'pino';
import { tokenDigest, type People, type UserRow } from '../../persistence/people.js';
import type { Identity } from './identity.js';

const LOOK_EVERY_MS = 1000;
/** A user's `last_seen_at` is written at most this often: a request is not a write. */
const SEEN_EVERY_MS = 60_000;

export class UserDirectory {
  private byDigest = new Map<string, UserRow>();
  /** The connections each user's token opened: ended when the user goes. */
  private readonly open = new Map<string, Set<() => void>>();
  private readonly seenAt = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;
  private looking: Promise<void> | null = null;
  private lookBeganMs = 0;

  constructor(
    private readonly people: () => Promise<People | null>,
    private readonly log: Logger,
  ) {
    this.timer = setInterval(() => void this.look(), LOOK_EVERY_MS);
    this.timer.unref();
  }

  /** The first look, awaited before the edge serves, so a user made before the start is known at once. */
  start(): Promise<void> {
    return this.look();
  }

  async identify(token: string): Promise<Identity | null> {
    const digest = tokenDigest(token);
    const known = this.identifyDigest(digest);
    if (known !== null) return known;
    const missedAt = performance.now();
    while (this.lookBeganMs < missedAt) await this.look();
    return this.identifyDigest(digest);
  }

  /** A page login keeps its token's digest, never the token: it holds while that user does. */
  identifyDigest(digest: string): Identity | null {
    const user = this.byDigest.get(digest);
    if (user === undefined) return null;
    this.seen(user.name);
    return { user: user.name, admin: user.admin, via: 'token' };
  }

  /** A connection a personal token opened: `end` closes it when its user is removed. Returns the forget. */
  opened(identity: Identity, end: () => void): () => void {
    if (identity.via !== 'token') return () => {};
    const ends = this.open.get(identity.user) ?? new Set();
    ends.add(end);
    this.open.set(identity.user, ends);
    return () => ends.delete(end);
  }

  close(): void {
    clearInterval(this.timer);
  }

  private look(): Promise<void> {
    this.looking ??= this.readUsers().finally(() => (this.looking = null));
    return this.looking;
  }

  private async readUsers(): Promise<void> {
    this.lookBeganMs = performance.now();
    let users: UserRow[];
    try {
      users = (await (await this.people())?.users()) ?? [];
    } catch (err) {
      this.log.warn({ why: (err as Error).message }, 'could not read the users: the ones known stay until the store answers');
      return;
    }
    this.byDigest = new Map(users.map((user) => [user.token_sha256, user]));
    const present = new Set(users.map((user) => user.name));
    for (const [name, ends] of this.open) {
      if (present.has(name)) continue;
      this.open.delete(name);
      if (ends.size > 0) this.log.info({ user: name, closed: ends.size }, 'a user was removed: the connections their token opened are closed');
      for (const end of ends) end();
    }
  }

  private seen(name: string): void {
    const now = Date.now();
    if (now - (this.seenAt.get(name) ?? 0) < SEEN_EVERY_MS) return;
    this.seenAt.set(name, now);
    void this.people()
      .then((people) => people?.touchUser(name, now))
      .catch(() => {});
  }
}
