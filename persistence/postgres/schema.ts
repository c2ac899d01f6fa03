// The tables in PostgreSQL, in the schema `turnhost`, as a list of migrations; the table
// `schema_version` records how many have run. The host runs the missing ones at start, all in one
// transaction under an advisory lock, so two hosts starting at once migrate once. The columns
// match SQLite's (persistence/sqlite/schema.ts), so both readers share their queries; times are
// epoch milliseconds in bigint, as there.
import type pg from 'pg';
import { ROLL_UP_ENDED_SQL } from '../ledger.js';

export const SCHEMA = 'turnhost';

/** A new cluster secret, drawn by the server: two of gen_random_uuid()'s strong random values (244 bits). */
export const NEW_CLUSTER_SECRET = "replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', '')";

const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE sessions (
    sid             text PRIMARY KEY,
    session_key     text NOT NULL,
    status          text NOT NULL CHECK (status IN ('active', 'finalized', 'retained')),
    end_reason      text,
    retained_reason text,
    history_version bigint NOT NULL DEFAULT 0,
    overrides       text NOT NULL DEFAULT '',
    cwd             text,
    boot_id         text,
    created_at      bigint NOT NULL,
    updated_at      bigint NOT NULL,
    queue_revision  bigint NOT NULL DEFAULT 0
  );
  CREATE INDEX sessions_by_status ON sessions (status);

  CREATE TABLE messages (
    sid          text NOT NULL,
    seq          integer NOT NULL,
    role         text NOT NULL,
    content      text NOT NULL,
    turn_id      text,
    created_at   bigint NOT NULL,
    tool_calls   text,
    tool_call_id text,
    PRIMARY KEY (sid, seq)
  );

  CREATE TABLE turns (
    turn_id           text PRIMARY KEY,
    sid               text NOT NULL,
    request_id        text,
    status            text NOT NULL CHECK (status IN ('running', 'completed', 'interrupted', 'failed', 'lost')),
    boot_id           text,
    started_at        bigint NOT NULL,
    ended_at          bigint,
    error             text,
    model             text,
    prompt_tokens     bigint,
    completion_tokens bigint,
    model_calls       integer
  );
  CREATE INDEX turns_running ON turns (status) WHERE status = 'running';

  CREATE TABLE server_requests (
    id          text PRIMARY KEY,
    sid         text NOT NULL,
    turn_id     text,
    method      text NOT NULL,
    params      text NOT NULL,
    status      text NOT NULL CHECK (status IN ('open', 'answered', 'expired', 'cancelled')),
    answers     text,
    reason      text,
    boot_id     text,
    created_at  bigint NOT NULL,
    resolved_at bigint
  );
  CREATE INDEX server_requests_open ON server_requests (boot_id) WHERE status = 'open';

  CREATE TABLE boots (
    boot_id    text PRIMARY KEY,
    pid        integer NOT NULL,
    started_at bigint NOT NULL,
    ended_at   bigint,
    end_reason text
  );

  CREATE TABLE queue (
    queue_id          text PRIMARY KEY,
    sid               text NOT NULL,
    position          bigint NOT NULL,
    text              text NOT NULL,
    client_message_id text,
    request_id        text NOT NULL,
    turn_id           text NOT NULL,
    steered           smallint NOT NULL DEFAULT 0,
    queued_at         bigint NOT NULL
  );
  CREATE INDEX queue_by_session ON queue (sid, position);

  -- ord plays SQLite's rowid: the oldest remembered id of a session is its smallest ord.
  CREATE TABLE submits (
    ord               bigserial PRIMARY KEY,
    sid               text NOT NULL,
    client_message_id text NOT NULL,
    turn_id           text NOT NULL,
    queue_id          text,
    steered           smallint NOT NULL DEFAULT 0,
    UNIQUE (sid, client_message_id)
  );
  CREATE INDEX submits_by_session ON submits (sid, ord);
  `,
  // Several nodes on one database (PROTOCOL.md §6.2): a session's lease, and the fence every
  // transaction of a node passes for the sessions it writes. The fence holds the lease rows FOR
  // SHARE until the transaction ends, so a takeover waits for a write already under way.
  `
  ALTER TABLE boots ADD COLUMN node_id text;
  CREATE TABLE leases (
    sid        text PRIMARY KEY,
    node_id    text NOT NULL,
    epoch      bigint NOT NULL,
    expires_at timestamptz NOT NULL
  );
  CREATE INDEX leases_by_node ON leases (node_id);
  CREATE FUNCTION fence(node text, sids text[], epochs bigint[]) RETURNS void LANGUAGE plpgsql AS $fence$
  BEGIN
    PERFORM 1 FROM turnhost.leases WHERE sid = ANY(sids) FOR SHARE;
    IF (SELECT count(*) FROM turnhost.leases l JOIN unnest(sids, epochs) AS h(sid, epoch) ON l.sid = h.sid AND l.epoch = h.epoch
        WHERE l.node_id = node) <> cardinality(sids) THEN
      RAISE EXCEPTION 'this node no longer holds the lease of a session it writes' USING ERRCODE = 'TH001';
    END IF;
  END
  $fence$;
  `,
  // The nodes of the cluster, each row kept by its node's heartbeat (the same statement that renews
  // its leases), removed by a clean stop: what `status` shows as `cluster.nodes`.
  `
  CREATE TABLE nodes (
    node_id      text PRIMARY KEY,
    url          text,
    boot_id      text,
    heartbeat_at timestamptz NOT NULL,
    sessions     integer NOT NULL DEFAULT 0
  );
  `,
  // The secret the nodes show each other when one forwards a client's method to the session's
  // owner: made once, with the database; gen_random_uuid() draws from the server's strong random
  // source (two of them: 244 random bits).
  `
  CREATE TABLE cluster_secret (
    one    boolean PRIMARY KEY DEFAULT true CHECK (one),
    secret text NOT NULL
  );
  INSERT INTO cluster_secret (secret) VALUES (${NEW_CLUSTER_SECRET});
  `,
  // A guest agent's own session id (AGENT.md §6), committed before its first prompt is sent.
  `
  ALTER TABLE sessions ADD COLUMN agent_session_id text;
  `,
  // People (PROTOCOL.md §5.6): personal tokens as their SHA-256 only, and who may see or drive a
  // session. A session without rows here belongs to the home's owner. Written by the daemons and
  // the CLI, never on a turn's path; every node reads the same users.
  `
  CREATE TABLE users (
    name         text PRIMARY KEY,
    admin        boolean NOT NULL,
    token_sha256 text NOT NULL UNIQUE,
    created_at   bigint NOT NULL,
    last_seen_at bigint
  );
  CREATE TABLE session_access (
    sid       text NOT NULL,
    user_name text NOT NULL,
    role      text NOT NULL CHECK (role IN ('owner', 'editor', 'viewer')),
    PRIMARY KEY (sid, user_name)
  );
  CREATE INDEX session_access_by_user ON session_access (user_name);
  ALTER TABLE turns ADD COLUMN by_user text;
  ALTER TABLE queue ADD COLUMN by_user text;
  `,
  // Unattended work (PROTOCOL.md §8): schedules, and the webhook outbox. The daemon writes both on
  // its side connection; the host adds an outbox row in the commit of what it reports: a row names
  // it (`ref`: the turn or the request) and the daemon reads the rest when it sends it. No index but
  // the key, and no body: either cost each turn's commit more than the row itself (bench: host).
  `
  CREATE TABLE schedules (
    schedule_id text PRIMARY KEY,
    sid         text NOT NULL,
    text        text NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('cron', 'every', 'at')),
    spec        text NOT NULL,
    tz          text NOT NULL,
    catch_up    text NOT NULL,
    on_busy     text NOT NULL,
    next_at     bigint,
    last_at     bigint,
    fires       integer NOT NULL DEFAULT 0,
    created_by  text NOT NULL,
    created_at  bigint NOT NULL,
    claimed_by  text,
    claim_until bigint
  );
  CREATE INDEX schedules_by_next ON schedules (next_at);
  ALTER TABLE server_requests ADD COLUMN answered_by text;
  CREATE TABLE webhook_outbox (
    seq          bigserial PRIMARY KEY,
    sid          text NOT NULL,
    type         text NOT NULL,
    ref          text NOT NULL,
    detail       text,
    created_at   bigint NOT NULL,
    attempts     integer NOT NULL DEFAULT 0,
    next_at      bigint NOT NULL,
    status       text NOT NULL DEFAULT 'pending',
    delivered_to text NOT NULL DEFAULT '[]',
    last_error   text
  );
  `,
  // Each webhook URL its own stream (persistence/sqlite/schema.ts says why).
  `
  CREATE TABLE webhook_deliveries (
    id         bigserial PRIMARY KEY,
    url        text NOT NULL,
    sid        text NOT NULL,
    type       text NOT NULL,
    ref        text NOT NULL,
    detail     text,
    created_at bigint NOT NULL,
    attempts   integer NOT NULL DEFAULT 0,
    next_at    bigint NOT NULL DEFAULT 0,
    status     text NOT NULL DEFAULT 'pending',
    last_error text
  );
  CREATE INDEX webhook_deliveries_streams ON webhook_deliveries (url, status, sid, id);
  INSERT INTO webhook_deliveries (url, sid, type, ref, detail, created_at, attempts, status, last_error)
    SELECT '', sid, type, ref, detail, created_at, attempts, 'failed', last_error FROM webhook_outbox WHERE status = 'failed' ORDER BY seq;
  DELETE FROM webhook_outbox WHERE status = 'failed';
  ALTER TABLE webhook_outbox DROP COLUMN attempts, DROP COLUMN next_at, DROP COLUMN status, DROP COLUMN last_error;
  `,
  // Branches (persistence/sqlite/schema.ts says why).
  `
  ALTER TABLE sessions ADD COLUMN parent_sid text;
  ALTER TABLE sessions ADD COLUMN parent_upto bigint;
  ALTER TABLE sessions ADD COLUMN forked_from_sid text;
  ALTER TABLE sessions ADD COLUMN forked_from_turn text;
  ALTER TABLE sessions ADD COLUMN branch_of text;
  ALTER TABLE turns ADD COLUMN superseded_at bigint;
  ALTER TABLE turns ADD COLUMN superseded_by text;
  ALTER TABLE turns ADD COLUMN branch_sid text;
  CREATE INDEX sessions_by_parent ON sessions (parent_sid) WHERE parent_sid IS NOT NULL;
  CREATE INDEX sessions_by_branch ON sessions (branch_of) WHERE branch_of IS NOT NULL;
  CREATE INDEX sessions_by_fork_source ON sessions (forked_from_sid) WHERE forked_from_sid IS NOT NULL;
  `,
  // The ledger and budgets (persistence/sqlite/schema.ts says why).
  `
  ALTER TABLE turns ADD COLUMN cached_tokens bigint;
  ALTER TABLE turns ADD COLUMN reasoning_tokens bigint;
  CREATE TABLE usage_daily (
    day               bigint NOT NULL,
    by_user           text NOT NULL,
    sid               text NOT NULL,
    model             text NOT NULL,
    turns             bigint NOT NULL,
    prompt_tokens     bigint NOT NULL,
    completion_tokens bigint NOT NULL,
    cached_tokens     bigint NOT NULL,
    reasoning_tokens  bigint NOT NULL,
    calls             bigint NOT NULL,
    duration_ms       bigint NOT NULL,
    PRIMARY KEY (day, by_user, sid, model)
  );
  CREATE TABLE budgets (
    user_name      text PRIMARY KEY,
    tokens_per_day bigint,
    turns_per_day  bigint,
    updated_at     bigint NOT NULL
  );
  CREATE INDEX turns_running_by ON turns (by_user) WHERE status = 'running';
  ${ROLL_UP_ENDED_SQL};
  ALTER TABLE schedules ADD COLUMN skips integer NOT NULL DEFAULT 0;
  ALTER TABLE schedules ADD COLUMN last_skip text;
  `,
  // Traces (persistence/sqlite/schema.ts says why).
  `
  ALTER TABLE turns ADD COLUMN trace text;
  `,
  // Workspaces belong to people, and a session's agent (persistence/sqlite/schema.ts says why).
  `
  ALTER TABLE sessions ADD COLUMN flat_workspace boolean NOT NULL DEFAULT false;
  UPDATE sessions SET flat_workspace = true WHERE cwd IS NULL;
  ALTER TABLE sessions ADD COLUMN agent text;
  ALTER TABLE nodes ADD COLUMN catalogue text;
  `,
  // A guest's home in the store (persistence/sqlite/schema.ts says why).
  `
  CREATE TABLE home_contents (
    sha256 text PRIMARY KEY,
    bytes  bytea NOT NULL
  );
  CREATE TABLE home_snapshots (
    sid      text PRIMARY KEY,
    version  bigint NOT NULL,
    taken_at bigint NOT NULL
  );
  CREATE TABLE home_entries (
    sid    text NOT NULL,
    path   text NOT NULL,
    kind   text NOT NULL CHECK (kind IN ('file', 'link', 'dir')),
    mode   integer NOT NULL,
    sha256 text,
    target text,
    size   bigint NOT NULL,
    PRIMARY KEY (sid, path)
  );
  CREATE INDEX home_entries_by_content ON home_entries (sha256) WHERE sha256 IS NOT NULL;
  `,
  // A session's life (persistence/sqlite/schema.ts says why).
  `
  ALTER TABLE sessions ADD COLUMN archived_at bigint;
  ALTER TABLE sessions ADD COLUMN pinned integer NOT NULL DEFAULT 0;
  CREATE TABLE deleted_sessions (
    sid            text PRIMARY KEY,
    deleted_at     bigint NOT NULL,
    by_user        text,
    agent          text,
    owner          text,
    cwd            text,
    flat_workspace boolean NOT NULL,
    files_pending  integer NOT NULL
  );
  CREATE TABLE sweeps (
    name   text PRIMARY KEY,
    holder text NOT NULL,
    until  bigint NOT NULL
  );
  `,
  // Content beyond text (persistence/sqlite/schema.ts says why).
  `
  ALTER TABLE messages ADD COLUMN parts text;
  ALTER TABLE queue ADD COLUMN content text;
  CREATE TABLE session_blobs (
    sid       text NOT NULL,
    sha256    text NOT NULL,
    mime_type text NOT NULL,
    size      bigint NOT NULL,
    name      text,
    at        bigint NOT NULL,
    PRIMARY KEY (sid, sha256)
  );
  CREATE INDEX session_blobs_by_content ON session_blobs (sha256);
  CREATE TABLE blob_uploads (
    sha256    text NOT NULL,
    by_user   text NOT NULL,
    mime_type text NOT NULL,
    size      bigint NOT NULL,
    name      text,
    at        bigint NOT NULL,
    PRIMARY KEY (sha256, by_user)
  );
  `,
  // A schedule's prompt may carry files (persistence/sqlite/schema.ts says why).
  `
  ALTER TABLE schedules ADD COLUMN content text;
  `,
  // A content's chunks after its first (persistence/sqlite/schema.ts says why).
  `
  CREATE TABLE content_chunks (
    sha256 text NOT NULL,
    seq    integer NOT NULL,
    bytes  bytea NOT NULL,
    PRIMARY KEY (sha256, seq)
  );
  `,
];

export const SCHEMA_VERSION = MIGRATIONS.length;

/** One key for the whole cluster of turnhost's advisory locks: the migration's, and the single host's. */
export const MIGRATION_LOCK = 0x7475726e; // "turn"
export const HOST_LOCK = 0x686f7374; // "host"
/** What the fence raises: the transaction wrote a session whose lease this node lost. */
export const LEASE_LOST_CODE = 'TH001';

/** Brings the schema up to SCHEMA_VERSION; refuses one written by a newer build. */
export async function migrate(client: pg.ClientBase): Promise<void> {
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${SCHEMA}`);
    await client.query(`CREATE TABLE IF NOT EXISTS ${SCHEMA}.schema_version (version integer NOT NULL)`);
    const { rows } = await client.query<{ version: number }>(`SELECT version FROM ${SCHEMA}.schema_version`);
    const current = rows[0]?.version ?? 0;
    if (current > SCHEMA_VERSION) throw new Error(`database schema version ${current} is newer than this build understands (${SCHEMA_VERSION})`);
    for (let version = current; version < SCHEMA_VERSION; version++) await client.query(MIGRATIONS[version]!);
    if (rows.length === 0) await client.query(`INSERT INTO ${SCHEMA}.schema_version VALUES ($1)`, [SCHEMA_VERSION]);
    else await client.query(`UPDATE ${SCHEMA}.schema_version SET version = $1`, [SCHEMA_VERSION]);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  }
}
