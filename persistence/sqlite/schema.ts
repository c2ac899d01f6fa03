// The database schema, as a list of migrations. `PRAGMA user_version` records how many have run;
// the host runs the missing ones at start, each in its own transaction.
// Every page a turn touches is written to the WAL on each commit, so the tables a turn writes
// (messages, turns, sessions) are WITHOUT ROWID and carry no index a turn would have to update,
// but one of running turns only (the ledger's, below).
import type Database from 'better-sqlite3';
import { ROLL_UP_ENDED_SQL } from '../ledger.js';

const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE sessions (
    sid             TEXT PRIMARY KEY,
    session_key     TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('active', 'finalized', 'retained')),
    end_reason      TEXT,
    retained_reason TEXT,
    history_version INTEGER NOT NULL DEFAULT 0,
    overrides       TEXT NOT NULL DEFAULT '',
    cwd             TEXT,
    boot_id         TEXT,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE INDEX sessions_by_status ON sessions (status);

  CREATE TABLE messages (
    sid        TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    role       TEXT NOT NULL,
    content    TEXT NOT NULL,
    turn_id    TEXT,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (sid, seq)
  ) WITHOUT ROWID;

  CREATE TABLE turns (
    turn_id    TEXT PRIMARY KEY,
    sid        TEXT NOT NULL,
    request_id TEXT,
    status     TEXT NOT NULL CHECK (status IN ('running', 'completed', 'interrupted', 'failed', 'lost')),
    boot_id    TEXT,
    started_at INTEGER NOT NULL,
    ended_at   INTEGER,
    error      TEXT
  ) WITHOUT ROWID;

  CREATE TABLE server_requests (
    id          TEXT PRIMARY KEY,
    sid         TEXT NOT NULL,
    turn_id     TEXT,
    method      TEXT NOT NULL,
    params      TEXT NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('open', 'answered', 'expired', 'cancelled')),
    answers     TEXT,
    reason      TEXT,
    boot_id     TEXT,
    created_at  INTEGER NOT NULL,
    resolved_at INTEGER
  );
  CREATE INDEX server_requests_open ON server_requests (boot_id) WHERE status = 'open';

  CREATE TABLE boots (
    boot_id    TEXT PRIMARY KEY,
    pid        INTEGER NOT NULL,
    started_at INTEGER NOT NULL,
    ended_at   INTEGER,
    end_reason TEXT
  );
  `,
  // The model agent (AGENT.md §3): tool calls and results in the Chat Completions shape, and each
  // turn's model and token usage. Old databases gain the columns in place, NULL for old rows.
  `
  ALTER TABLE messages ADD COLUMN tool_calls TEXT;
  ALTER TABLE messages ADD COLUMN tool_call_id TEXT;
  ALTER TABLE turns ADD COLUMN model TEXT;
  ALTER TABLE turns ADD COLUMN prompt_tokens INTEGER;
  ALTER TABLE turns ADD COLUMN completion_tokens INTEGER;
  ALTER TABLE turns ADD COLUMN model_calls INTEGER;
  `,
  // Input while a turn runs (PROTOCOL.md §2.1). `queue` holds each session's waiting prompts in
  // `position` order, and the steered texts the running turn has not taken yet (`steered` = 1: not
  // shown in the queue; back at its head when the turn ends or the host died). `submits` remembers
  // each session's last 1,000 client_message_ids (by rowid) so a repeated submit runs nothing.
  `
  ALTER TABLE sessions ADD COLUMN queue_revision INTEGER NOT NULL DEFAULT 0;
  CREATE TABLE queue (
    queue_id          TEXT PRIMARY KEY,
    sid               TEXT NOT NULL,
    position          INTEGER NOT NULL,
    text              TEXT NOT NULL,
    client_message_id TEXT,
    request_id        TEXT NOT NULL,
    turn_id           TEXT NOT NULL,
    steered           INTEGER NOT NULL DEFAULT 0,
    queued_at         INTEGER NOT NULL
  );
  CREATE INDEX queue_by_session ON queue (sid, position);
  CREATE TABLE submits (
    sid               TEXT NOT NULL,
    client_message_id TEXT NOT NULL,
    turn_id           TEXT NOT NULL,
    queue_id          TEXT,
    steered           INTEGER NOT NULL DEFAULT 0,
    UNIQUE (sid, client_message_id)
  );
  CREATE INDEX submits_by_session ON submits (sid);
  `,
  // A guest agent's own session id (AGENT.md §6), committed before its first prompt is sent.
  `
  ALTER TABLE sessions ADD COLUMN agent_session_id TEXT;
  `,
  // People (PROTOCOL.md §5.6): personal tokens as their SHA-256 only, and who may see or drive a
  // session. A session without rows here belongs to the home's owner. Written by the daemon and
  // the CLI, never on a turn's path.
  `
  CREATE TABLE users (
    name         TEXT PRIMARY KEY,
    admin        INTEGER NOT NULL,
    token_sha256 TEXT NOT NULL UNIQUE,
    created_at   INTEGER NOT NULL,
    last_seen_at INTEGER
  );
  CREATE TABLE session_access (
    sid       TEXT NOT NULL,
    user_name TEXT NOT NULL,
    role      TEXT NOT NULL CHECK (role IN ('owner', 'editor', 'viewer')),
    PRIMARY KEY (sid, user_name)
  );
  CREATE INDEX session_access_by_user ON session_access (user_name);
  ALTER TABLE turns ADD COLUMN by_user TEXT;
  ALTER TABLE queue ADD COLUMN by_user TEXT;
  `,
  // Unattended work (PROTOCOL.md §8): schedules, and the webhook outbox. The daemon writes both on
  // its side connection; the host adds an outbox row in the commit of what it reports: a row names
  // it (`ref`: the turn or the request) and the daemon reads the rest when it sends it. No index but
  // the key, and no body: either cost each turn's commit more than the row itself (bench: host).
  `
  CREATE TABLE schedules (
    schedule_id TEXT PRIMARY KEY,
    sid         TEXT NOT NULL,
    text        TEXT NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('cron', 'every', 'at')),
    spec        TEXT NOT NULL,
    tz          TEXT NOT NULL,
    catch_up    TEXT NOT NULL,
    on_busy     TEXT NOT NULL,
    next_at     INTEGER,
    last_at     INTEGER,
    fires       INTEGER NOT NULL DEFAULT 0,
    created_by  TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    claimed_by  TEXT,
    claim_until INTEGER
  );
  CREATE INDEX schedules_by_next ON schedules (next_at);
  ALTER TABLE server_requests ADD COLUMN answered_by TEXT;
  CREATE TABLE webhook_outbox (
    seq          INTEGER PRIMARY KEY,
    sid          TEXT NOT NULL,
    type         TEXT NOT NULL,
    ref          TEXT NOT NULL,
    detail       TEXT,
    created_at   INTEGER NOT NULL,
    attempts     INTEGER NOT NULL DEFAULT 0,
    next_at      INTEGER NOT NULL,
    status       TEXT NOT NULL DEFAULT 'pending',
    delivered_to TEXT NOT NULL DEFAULT '[]',
    last_error   TEXT
  );
  `,
  // Each webhook URL its own stream (PROTOCOL.md §8.2): the daemon makes each event one delivery
  // per URL and takes it out of the outbox, which so holds only what the host wrote since the last
  // look. Events given up on before were given up on every URL: they stay failed, under no URL.
  `
  CREATE TABLE webhook_deliveries (
    id         INTEGER PRIMARY KEY,
    url        TEXT NOT NULL,
    sid        TEXT NOT NULL,
    type       TEXT NOT NULL,
    ref        TEXT NOT NULL,
    detail     TEXT,
    created_at INTEGER NOT NULL,
    attempts   INTEGER NOT NULL DEFAULT 0,
    next_at    INTEGER NOT NULL DEFAULT 0,
    status     TEXT NOT NULL DEFAULT 'pending',
    last_error TEXT
  );
  CREATE INDEX webhook_deliveries_streams ON webhook_deliveries (url, status, sid, id);
  INSERT INTO webhook_deliveries (url, sid, type, ref, detail, created_at, attempts, status, last_error)
    SELECT '', sid, type, ref, detail, created_at, attempts, 'failed', last_error FROM webhook_outbox WHERE status = 'failed' ORDER BY seq;
  DELETE FROM webhook_outbox WHERE status = 'failed';
  ALTER TABLE webhook_outbox DROP COLUMN attempts;
  ALTER TABLE webhook_outbox DROP COLUMN next_at;
  ALTER TABLE webhook_outbox DROP COLUMN status;
  ALTER TABLE webhook_outbox DROP COLUMN last_error;
  `,
  // Branches (PROTOCOL.md §2.2): a fork shares its source's first messages instead of copying them
  // (`parent_sid`, `parent_upto`: its line is the parent's line below `parent_upto`, then its own
  // rows); a rewind moves the turns it supersedes, rows and all, to a branch of the session
  // (`branch_of`), which keeps the path it leaves, never listed as a session of its own.
  `
  ALTER TABLE sessions ADD COLUMN parent_sid TEXT;
  ALTER TABLE sessions ADD COLUMN parent_upto INTEGER;
  ALTER TABLE sessions ADD COLUMN forked_from_sid TEXT;
  ALTER TABLE sessions ADD COLUMN forked_from_turn TEXT;
  ALTER TABLE sessions ADD COLUMN branch_of TEXT;
  ALTER TABLE turns ADD COLUMN superseded_at INTEGER;
  ALTER TABLE turns ADD COLUMN superseded_by TEXT;
  ALTER TABLE turns ADD COLUMN branch_sid TEXT;
  CREATE INDEX sessions_by_parent ON sessions (parent_sid) WHERE parent_sid IS NOT NULL;
  CREATE INDEX sessions_by_branch ON sessions (branch_of) WHERE branch_of IS NOT NULL;
  CREATE INDEX sessions_by_fork_source ON sessions (forked_from_sid) WHERE forked_from_sid IS NOT NULL;
  `,
  // The ledger and budgets (PROTOCOL.md §5.7, persistence/ledger.ts): each turn's cached and
  // reasoning tokens; a schedule's skipped fires (a budget skips one); the daily sums by person, session and model, written with each turn's end and
  // filled here from the turns already ended; each person's budget. The running turns of a person
  // are counted at a turn's start (a budget of turns): a small index, of running turns only.
  `
  ALTER TABLE turns ADD COLUMN cached_tokens INTEGER;
  ALTER TABLE turns ADD COLUMN reasoning_tokens INTEGER;
  CREATE TABLE usage_daily (
    day               INTEGER NOT NULL,
    by_user           TEXT NOT NULL,
    sid               TEXT NOT NULL,
    model             TEXT NOT NULL,
    turns             INTEGER NOT NULL,
    prompt_tokens     INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cached_tokens     INTEGER NOT NULL,
    reasoning_tokens  INTEGER NOT NULL,
    calls             INTEGER NOT NULL,
    duration_ms       INTEGER NOT NULL,
    PRIMARY KEY (day, by_user, sid, model)
  ) WITHOUT ROWID;
  CREATE TABLE budgets (
    user_name      TEXT PRIMARY KEY,
    tokens_per_day INTEGER,
    turns_per_day  INTEGER,
    updated_at     INTEGER NOT NULL
  );
  CREATE INDEX turns_running_by ON turns (by_user) WHERE status = 'running';
  ${ROLL_UP_ENDED_SQL};
  ALTER TABLE schedules ADD COLUMN skips INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE schedules ADD COLUMN last_skip TEXT;
  `,
  // Traces (PROTOCOL.md §5.8): a traced turn's span ids, written with its start, so that the host
  // that finds it lost ends that same span, with an error.
  `
  ALTER TABLE turns ADD COLUMN trace TEXT;
  `,
  // Workspaces belong to people (AGENT.md §7): a session without a folder of its own works in
  // `<root>/<owner>/<sid>`; those stored before (flat_workspace = 1) keep `<root>/<sid>`. Several
  // agents (§8): a session's agent, the catalogue's name, fixed once stored (NULL: stored before,
  // it takes the default agent at its next save).
  `
  ALTER TABLE sessions ADD COLUMN flat_workspace INTEGER NOT NULL DEFAULT 0;
  UPDATE sessions SET flat_workspace = 1 WHERE cwd IS NULL;
  ALTER TABLE sessions ADD COLUMN agent TEXT;
  `,
  // A guest's home in the store (AGENT.md §6; persistence/home-snapshots.ts): each session's latest
  // snapshot of its agent home, its entries, and their contents kept once by SHA-256.
  `
  CREATE TABLE home_contents (
    sha256 TEXT PRIMARY KEY,
    bytes  BLOB NOT NULL
  ) WITHOUT ROWID;
  CREATE TABLE home_snapshots (
    sid      TEXT PRIMARY KEY,
    version  INTEGER NOT NULL,
    taken_at INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE TABLE home_entries (
    sid    TEXT NOT NULL,
    path   TEXT NOT NULL,
    kind   TEXT NOT NULL CHECK (kind IN ('file', 'link', 'dir')),
    mode   INTEGER NOT NULL,
    sha256 TEXT,
    target TEXT,
    size   INTEGER NOT NULL,
    PRIMARY KEY (sid, path)
  ) WITHOUT ROWID;
  CREATE INDEX home_entries_by_content ON home_entries (sha256) WHERE sha256 IS NOT NULL;
  `,
  // A session's life (PROTOCOL.md §2.3; persistence/session-life.ts): archived sessions leave the
  // lists, pinned ones stay through retention, and a deleted session leaves a tombstone (its id is
  // never used again; its files are removed after the commit, `files_pending` until then).
  `
  ALTER TABLE sessions ADD COLUMN archived_at INTEGER;
  ALTER TABLE sessions ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;
  CREATE TABLE deleted_sessions (
    sid            TEXT PRIMARY KEY,
    deleted_at     INTEGER NOT NULL,
    by_user        TEXT,
    agent          TEXT,
    owner          TEXT,
    cwd            TEXT,
    flat_workspace INTEGER NOT NULL,
    files_pending  INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE TABLE sweeps (
    name   TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    until  INTEGER NOT NULL
  ) WITHOUT ROWID;
  `,
  // Content beyond text (PROTOCOL.md §2.4; persistence/blobs.ts): a message's blocks (`parts`, JSON;
  // `content` keeps its text form) and a queued prompt's; the blobs each session may read, and who
  // uploaded what. The bytes themselves are in home_contents, once.
  `
  ALTER TABLE messages ADD COLUMN parts TEXT;
  ALTER TABLE queue ADD COLUMN content TEXT;
  CREATE TABLE session_blobs (
    sid       TEXT NOT NULL,
    sha256    TEXT NOT NULL,
    mime_type TEXT NOT NULL,
    size      INTEGER NOT NULL,
    name      TEXT,
    at        INTEGER NOT NULL,
    PRIMARY KEY (sid, sha256)
  ) WITHOUT ROWID;
  CREATE INDEX session_blobs_by_content ON session_blobs (sha256);
  CREATE TABLE blob_uploads (
    sha256    TEXT NOT NULL,
    by_user   TEXT NOT NULL,
    mime_type TEXT NOT NULL,
    size      INTEGER NOT NULL,
    name      TEXT,
    at        INTEGER NOT NULL,
    PRIMARY KEY (sha256, by_user)
  ) WITHOUT ROWID;
  `,
  // A schedule's prompt may carry files (PROTOCOL.md §2.4): its blocks, as JSON naming blobs; null for text.
  `
  ALTER TABLE schedules ADD COLUMN content TEXT;
  `,
  // A content over a chunk (persistence/blobs.ts, CONTENT_CHUNK_BYTES): home_contents holds its first
  // chunk, content_chunks the rest, so that no statement binds a 20 MiB value (each binding and each
  // record is a copy of it in memory).
  `
  CREATE TABLE content_chunks (
    sha256 TEXT NOT NULL,
    seq    INTEGER NOT NULL,
    bytes  BLOB NOT NULL,
    PRIMARY KEY (sha256, seq)
  ) WITHOUT ROWID;
  `,
];

export const SCHEMA_VERSION = MIGRATIONS.length;

/**
 * Brings the database up to SCHEMA_VERSION; refuses one written by a newer build. Each step reads
 * the version inside its own write transaction, so two processes opening a new home at once (a
 * host, and the daemon's or the CLI's people) run each migration once.
 */
export function migrate(db: Database.Database): void {
  const step = db.transaction((): boolean => {
    const current = db.pragma('user_version', { simple: true }) as number;
    if (current > SCHEMA_VERSION) throw new Error(`database schema version ${current} is newer than this build understands (${SCHEMA_VERSION})`);
    if (current === SCHEMA_VERSION) return false;
    db.exec(MIGRATIONS[current]!);
    db.pragma(`user_version = ${current + 1}`);
    return true;
  });
  while (step.immediate()) continue;
}
