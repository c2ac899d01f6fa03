// A guest's memory on every node (AGENT.md §6): the session's agent home (Claude Code's
// transcripts, Codex's sessions, a Python guest's state) follows the session through the store.
// After a turn ends, once the home has been quiet for 200 ms, and when its guest is released, what
// changed since the last snapshot goes to the store (persistence/home-snapshots.ts): files by their
// contents' SHA-256 (an unchanged file is never read again, one the store holds is never sent
// again), links as links, modes kept, nothing outside the home, removals recorded. A node that makes
// the session live and lacks the latest snapshot, or holds an older one, restores it before
// `session/load`. Never inside a turn's commit, never in a turn's way: a snapshot runs in the
// background, one at a time per session, and one that fails is tried again at the next turn's end.
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, chmodSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import type { HomeEntry, HomeSnapshots } from '../../persistence/home-snapshots.js';
import { pathGlobs } from './path-globs.js';

export interface HomeSyncConfig {
  /** `auto`: on with a store several nodes share (PostgreSQL), off with one machine's (SQLite). */
  mode: 'auto' | 'on' | 'off';
  /** Past this, a session's home is no longer synced (a warning says so once). */
  maxBytes: number;
  /** Paths (globs relative to the home) that never go to the store: caches. */
  exclude: string[];
}

export interface HomeSyncLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

/** How long a home must have been still before it is taken: Claude Code writes its transcript a moment after its turn. */
export const QUIET_MS = 200;
/** A home still written to this long after a turn's end is taken all the same. */
const QUIET_MAX_MS = 2000;
/** Contents sent in groups of about this much: a big home is never held in memory whole. */
const BATCH_BYTES = 8 * 1024 * 1024;

/** What this node knows of a file it synced or restored: reading it again is needed only when these change. */
interface Known {
  size: number;
  mtimeMs: number;
  sha256: string;
}

/** One session's state on this node. */
interface SessionSync {
  /** The snapshot this node last took or restored, and its entries, by path. */
  version: number;
  entries: Map<string, HomeEntry> | null;
  known: Map<string, Known>;
  /** Over the bound: not synced any more (said once). */
  overBound: boolean;
  /** The session's sync or restore under way: the next waits for it. */
  chain: Promise<void>;
  timer: NodeJS.Timeout | null;
}

export class HomeSync {
  private readonly sessions = new Map<string, SessionSync>();
  private readonly excluded: (path: string) => boolean;

  constructor(
    private readonly store: HomeSnapshots,
    private readonly config: HomeSyncConfig,
    /** The session's agent home on this node. */
    private readonly homeOf: (sid: string) => string,
    /** Where this node notes the version of each home it holds (outside the homes). */
    private readonly markers: string,
    private readonly log: HomeSyncLog,
  ) {
    this.excluded = pathGlobs(config.exclude);
  }

  /** After a turn ended: the home's changes go to the store once it has been quiet for QUIET_MS. */
  turnEnded(sid: string): void {
    const session = this.session(sid);
    if (session.timer !== null) clearTimeout(session.timer);
    const started = Date.now();
    const take = (): void => {
      session.timer = null;
      const newest = this.newestChange(sid);
      const quietFor = Date.now() - newest;
      if (quietFor < QUIET_MS && Date.now() - started < QUIET_MAX_MS) {
        session.timer = setTimeout(take, QUIET_MS - quietFor);
        session.timer.unref();
        return;
      }
      void this.sync(sid);
    };
    session.timer = setTimeout(take, QUIET_MS);
    session.timer.unref();
  }

  /** Its guest was released: what it wrote last goes to the store (in the background). */
  released(sid: string): void {
    const session = this.session(sid);
    if (session.timer !== null) clearTimeout(session.timer);
    session.timer = null;
    void this.sync(sid);
  }

  /** A deleted session: nothing of it is taken again, and what this node noted of it goes. */
  forget(sid: string): void {
    const session = this.sessions.get(sid);
    if (session !== undefined) {
      if (session.timer !== null) clearTimeout(session.timer);
      session.timer = null;
      session.overBound = true;
    }
    rmSync(this.markerPath(sid), { force: true });
  }

  /** Resolves once the session's snapshot under way (if any) is done. */
  settled(sid: string): Promise<void> {
    return this.sessions.get(sid)?.chain ?? Promise.resolve();
  }

  /**
   * Before the session is made live: a home this node lacks, or holds an older snapshot of, is
   * restored from the store (into `into`, the session's own home unless a fork takes its source's).
   * True when it restored.
   */
  restore(sid: string, into = this.homeOf(sid)): Promise<boolean> {
    const session = this.session(sid);
    const done = session.chain.then(() => this.restoreNow(sid, into, session));
    session.chain = done.then(
      () => {},
      () => {},
    );
    return done;
  }

  /** The session's changes since its last snapshot, to the store, after what it does now. */
  sync(sid: string): Promise<void> {
    const session = this.session(sid);
    session.chain = session.chain.then(() =>
      this.syncNow(sid, session).catch((err: unknown) => {
        // Tried again at the next turn's end; its entries are read again from the store then.
        session.entries = null;
        this.log.warn({ name: 'home-sync', sid, why: (err as Error).message }, "the guest's home could not be sent to the store: it is tried again after the next turn");
      }),
    );
    return session.chain;
  }

  private session(sid: string): SessionSync {
    let session = this.sessions.get(sid);
    if (session === undefined) {
      session = { version: this.marker(sid), entries: null, known: new Map(), overBound: false, chain: Promise.resolve(), timer: null };
      this.sessions.set(sid, session);
    }
    return session;
  }

  private async syncNow(sid: string, session: SessionSync): Promise<void> {
    if (session.overBound) return;
    const root = this.homeOf(sid);
    if (!existsSync(root)) return;
    const local = scan(root, this.excluded);
    const bytes = [...local.values()].reduce((sum, e) => sum + (e.kind === 'file' ? e.size : 0), 0);
    if (bytes > this.config.maxBytes) {
      session.overBound = true;
      this.log.warn(
        { name: 'home-sync-bound', sid, bytes, max: this.config.maxBytes },
        `the guest's home holds ${Math.round(bytes / 1048576)} MiB, past acp.home_sync.max_mib: it is not synced any more, and a node that takes the session over starts its guest anew`,
      );
      return;
    }
    if (session.entries === null) {
      const stored = await this.store.snapshot(sid);
      session.version = stored.version;
      session.entries = new Map(stored.entries.map((e) => [e.path, e]));
    }
    const entries = await this.entriesOf(root, local, session);
    const changed = [...entries.values()].filter((e) => !sameEntry(session.entries!.get(e.path), e));
    const removed = [...session.entries.keys()].filter((path) => !entries.has(path));
    if (changed.length === 0 && removed.length === 0) return;
    await this.sendContents(root, changed);
    const version = await this.store.commit(sid, session.version, changed, removed);
    if (version === null) {
      // Taken elsewhere since (another node's, after a takeover): the next sync starts from the store's.
      session.entries = null;
      return;
    }
    session.version = version;
    session.entries = entries;
    this.setMarker(sid, version);
  }

  /** The home's entries, each file's SHA-256 read only when its size or time changed since this node last knew it. */
  private async entriesOf(root: string, local: Map<string, LocalEntry>, session: SessionSync): Promise<Map<string, HomeEntry>> {
    const entries = new Map<string, HomeEntry>();
    const known = new Map<string, Known>();
    for (const [path, e] of local) {
      let sha256: string | null = null;
      if (e.kind === 'file') {
        const before = session.known.get(path);
        sha256 = before !== undefined && before.size === e.size && before.mtimeMs === e.mtimeMs ? before.sha256 : await fileSha256(join(root, path));
        known.set(path, { size: e.size, mtimeMs: e.mtimeMs, sha256 });
      }
      entries.set(path, { path, kind: e.kind, mode: e.mode, sha256, target: e.target, size: e.kind === 'file' ? e.size : 0 });
    }
    session.known = known;
    return entries;
  }

  /** The contents the store lacks, in groups of about BATCH_BYTES. */
  private async sendContents(root: string, changed: readonly HomeEntry[]): Promise<void> {
    const files = new Map(changed.filter((e) => e.kind === 'file').map((e) => [e.sha256!, e.path]));
    const missing = await this.store.missing([...files.keys()]);
    let batch: { sha256: string; bytes: Buffer }[] = [];
    let size = 0;
    for (const sha256 of missing) {
      const bytes = readFileSync(join(root, files.get(sha256)!));
      // Changed since it was hashed: its next sync sends it as it is then.
      if (createHash('sha256').update(bytes).digest('hex') !== sha256) continue;
      batch.push({ sha256, bytes });
      size += bytes.length;
      if (size >= BATCH_BYTES) {
        await this.store.putContents(batch);
        batch = [];
        size = 0;
      }
    }
    if (batch.length > 0) await this.store.putContents(batch);
  }

  private async restoreNow(sid: string, into: string, session: SessionSync): Promise<boolean> {
    const own = into === this.homeOf(sid);
    const stored = await this.store.version(sid);
    if (stored === 0 || (own && stored <= session.version && existsSync(into))) return false;
    const snapshot = await this.store.snapshot(sid);
    mkdirSync(into, { recursive: true, mode: 0o700 });
    const local = scan(into, this.excluded);
    const wanted = new Map(snapshot.entries.filter((e) => isInside(e.path)).map((e) => [e.path, e]));
    // What the snapshot does not hold goes first, deepest first; then folders, links and files, shallowest first.
    for (const path of [...local.keys()].filter((p) => !wanted.has(p)).sort().reverse()) rmSync(join(into, path), { recursive: true, force: true });
    const ordered = [...wanted.values()].sort((a, b) => a.path.split('/').length - b.path.split('/').length || a.path.localeCompare(b.path));
    const files = ordered.filter((e) => e.kind === 'file' && !sameFile(local.get(e.path), e, into));
    const contents = await this.store.contents([...new Set(files.map((e) => e.sha256!))]);
    for (const e of ordered) writeEntry(into, e, local.get(e.path), contents);
    chmodSync(into, 0o700);
    if (own) {
      session.version = snapshot.version;
      session.entries = wanted;
      session.known = new Map();
      this.setMarker(sid, snapshot.version);
    }
    this.log.info({ name: 'home-restored', sid, into, version: snapshot.version, entries: wanted.size, files: files.length }, "the guest's home was restored from the store");
    return true;
  }

  /** The newest change (ms) of anything in the home, by its times: a home written to now is not quiet. */
  private newestChange(sid: string): number {
    const root = this.homeOf(sid);
    if (!existsSync(root)) return 0;
    let newest = 0;
    for (const e of scan(root, this.excluded).values()) newest = Math.max(newest, e.mtimeMs, e.ctimeMs);
    return newest;
  }

  private markerPath(sid: string): string {
    return join(this.markers, encodeURIComponent(sid));
  }

  private marker(sid: string): number {
    try {
      return Number(readFileSync(this.markerPath(sid), 'utf8')) || 0;
    } catch {
      return 0;
    }
  }

  private setMarker(sid: string, version: number): void {
    mkdirSync(this.markers, { recursive: true, mode: 0o700 });
    const path = this.markerPath(sid);
    writeFileSync(`${path}.new`, String(version), { mode: 0o600 });
    renameSync(`${path}.new`, path);
  }
}

/** An entry as this node's file system has it. */
interface LocalEntry {
  kind: HomeEntry['kind'];
  mode: number;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
  target: string | null;
}

/** Everything under `root` but what is excluded (an excluded folder is not entered), links not followed. */
function scan(root: string, excluded: (path: string) => boolean): Map<string, LocalEntry> {
  const found = new Map<string, LocalEntry>();
  const walk = (relative: string): void => {
    let names: string[];
    try {
      names = readdirSync(join(root, relative));
    } catch {
      return; // gone meanwhile
    }
    for (const name of names) {
      const path = relative === '' ? name : `${relative}/${name}`;
      if (excluded(path)) continue;
      let stat;
      try {
        stat = lstatSync(join(root, path));
      } catch {
        continue;
      }
      const mode = stat.mode & 0o7777;
      const times = { mtimeMs: stat.mtimeMs, ctimeMs: stat.ctimeMs };
      if (stat.isSymbolicLink()) found.set(path, { kind: 'link', mode, size: 0, target: readlinkSync(join(root, path)), ...times });
      else if (stat.isDirectory()) {
        found.set(path, { kind: 'dir', mode, size: 0, target: null, ...times });
        walk(path);
      } else if (stat.isFile()) found.set(path, { kind: 'file', mode, size: stat.size, target: null, ...times });
    }
  };
  walk('');
  return found;
}

function fileSha256(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256');
    createReadStream(path)
      .on('data', (chunk) => hash.update(chunk))
      .once('error', reject)
      .once('end', () => resolve(hash.digest('hex')));
  });
}

function sameEntry(a: HomeEntry | undefined, b: HomeEntry): boolean {
  return a !== undefined && a.kind === b.kind && a.mode === b.mode && a.sha256 === b.sha256 && a.target === b.target && a.size === b.size;
}

/** Whether the local file already holds the snapshot's contents (its size first, then its SHA-256). */
function sameFile(local: LocalEntry | undefined, e: HomeEntry, root: string): boolean {
  if (local?.kind !== 'file' || local.size !== e.size) return false;
  return createHash('sha256').update(readFileSync(join(root, e.path))).digest('hex') === e.sha256;
}

/** A snapshot's path names a place inside the home: relative, without `..`, never through a link the snapshot does not name. */
function isInside(path: string): boolean {
  const normal = posix.normalize(path);
  return normal === path && !path.startsWith('/') && !path.startsWith('../') && path !== '..' && path !== '.' && path !== '';
}

/**
 * One entry written where the snapshot says, never through a link: its folder must be a folder of
 * the home itself (a link there, planted or restored, is refused), and a file goes in by rename.
 */
function writeEntry(root: string, e: HomeEntry, local: LocalEntry | undefined, contents: Map<string, Buffer>): void {
  const at = join(root, e.path);
  const parent = dirname(e.path);
  if (parent !== '.' && lstatSync(join(root, parent), { throwIfNoEntry: false })?.isDirectory() !== true) {
    throw new Error(`the snapshot's ${e.path} lies under ${parent}, which is not a folder of the home`);
  }
  if (local !== undefined && local.kind !== e.kind) rmSync(at, { recursive: true, force: true });
  switch (e.kind) {
    case 'dir':
      if (local?.kind !== 'dir') mkdirSync(at, { mode: 0o700 });
      chmodSync(at, e.mode);
      return;
    case 'link':
      if (local?.kind === 'link' && local.target === e.target) return;
      rmSync(at, { force: true });
      symlinkSync(e.target!, at);
      return;
    case 'file': {
      const bytes = contents.get(e.sha256!);
      if (bytes !== undefined) {
        writeFileSync(`${at}.turnhost-restore`, bytes, { mode: 0o600 });
        renameSync(`${at}.turnhost-restore`, at);
      }
      chmodSync(at, e.mode);
    }
  }
}
