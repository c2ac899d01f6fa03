// The PostgreSQL store's writing connection (postgres-store.ts), and the advisory locks on it that
// decide who writes the database: a host, or the nodes, each node id once.
import pg from 'pg';
import type { StoreLocation } from '../store-location.js';
import { nodeLockWaitMs } from '../store.js';
import { clientConfig } from './connection.js';
import type { NodeOptions } from './node-leases.js';
import { HOST_LOCK, migrate } from './schema.js';

/** The host's lock is held by another connection: another compute host uses this database. */
export class DatabaseTaken extends Error {}

/**
 * The writing connection, pipelined, holding the host's lock: all of it for a single host, a
 * share of it for a node (nodes run together; a single host and a node refuse each other), and a
 * node's own lock, so that one node id runs once. `migrating`: at start, the schema is brought up
 * to date first.
 */
export async function connectWriter(location: Extract<StoreLocation, { kind: 'postgres' }>, migrating: boolean, node?: NodeOptions): Promise<pg.Client> {
  const client = new pg.Client({ ...clientConfig(location, 'host'), pipeline: true } as pg.ClientConfig);
  client.on('error', () => {}); // until the store watches it: a failure shows in the query that meets it
  try {
    await client.connect();
    if (migrating) await migrate(client);
    const lock = node === undefined ? 'pg_try_advisory_lock($1)' : 'pg_try_advisory_lock_shared($1)';
    const { rows } = await client.query<{ locked: boolean }>(`SELECT ${lock} AS locked`, [HOST_LOCK]);
    if (rows[0]?.locked !== true) {
      throw new DatabaseTaken(node === undefined ? `another compute host is using the database ${location.shown}` : `a single host uses the database ${location.shown}`);
    }
    if (node !== undefined) {
      await takeNodeLock(client, node);
      await client.query("SELECT set_config('turnhost.node_id', $1, false)", [node.id]);
    }
  } catch (err) {
    await client.end().catch(() => {});
    throw err;
  }
  return client;
}

/** How often a starting node looks again at its own lock while an earlier start of it holds it. */
const NODE_LOCK_RETRY_MS = 200;

const NODE_LOCK_KEY = "hashtext('turnhost node ' || $1::text)::bigint";

/**
 * The node's own lock. A node killed with -9 lets go of it at once (the server sees its socket
 * close), but a connection the server still believes in (a client gone behind a dead network,
 * one left idle in a transaction) keeps it. So a start that finds it taken waits and watches the
 * node's heartbeat: a heartbeat that moves is a running node, and this start is refused; one that
 * grows older than a lease is an earlier start of this node, dead or cut off (fencing keeps it
 * from writing what it no longer owns), and the connections holding the lock are ended.
 */
async function takeNodeLock(client: pg.Client, node: NodeOptions): Promise<void> {
  const deadline = Date.now() + nodeLockWaitMs(node.leaseSecs);
  let firstBeat: number | null | undefined;
  for (;;) {
    const { rows } = await client.query<{ locked: boolean; beat: number | null; age_ms: number | null }>(
      `SELECT pg_try_advisory_lock(${NODE_LOCK_KEY}) AS locked,
              (SELECT (extract(epoch FROM heartbeat_at) * 1000)::bigint FROM nodes WHERE node_id = $1) AS beat,
              (SELECT (extract(epoch FROM now() - heartbeat_at) * 1000)::int FROM nodes WHERE node_id = $1) AS age_ms`,
      [node.id],
    );
    const { locked, beat, age_ms: ageMs } = rows[0]!;
    if (locked) return;
    firstBeat ??= beat;
    if ((beat !== null && beat !== firstBeat) || Date.now() > deadline) {
      throw new DatabaseTaken(`node ${node.id} is already running (its heartbeat is ${ageMs === null ? 'missing' : `${ageMs} ms old`})`);
    }
    if (ageMs === null || ageMs > node.leaseSecs * 1000) await endHoldersOfNodeLock(client, node.id);
    await new Promise((resolve) => setTimeout(resolve, NODE_LOCK_RETRY_MS));
  }
}

/** The backends holding the node's lock, other than this one, are ended (an advisory lock on a bigint key shows as classid:objid). */
async function endHoldersOfNodeLock(client: pg.Client, nodeId: string): Promise<void> {
  await client.query(
    `SELECT pg_terminate_backend(pid) FROM pg_locks
     WHERE locktype = 'advisory' AND granted AND objsubid = 1 AND pid <> pg_backend_pid()
       AND ((classid::bigint << 32) | objid::bigint) = ${NODE_LOCK_KEY}`,
    [nodeId],
  );
}
