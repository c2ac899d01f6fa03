// `turnhost cluster rotate-secret --store URL`: replaces the secret the nodes of a cluster prove to
// each other (PROTOCOL.md §6.2). Every node reads it again within a heartbeat; the links made with
// the old one end, and the next ones prove the new one. The secret is never printed.
import pg from 'pg';
import { clientConfig, described } from '../../persistence/postgres/connection.js';
import { NEW_CLUSTER_SECRET } from '../../persistence/postgres/schema.js';
import { storeLocation } from '../../persistence/store-location.js';
import { SECRET_REFRESH_MS } from '../../actors/daemon/cluster-secret.js';
import type { ClusterNode } from '../../persistence/reader.js';
import { withDaemon } from '../daemon-client.js';
import { printTable } from '../table.js';

/**
 * `turnhost cluster`: the nodes, as the running daemon's node sees them, each with its catalogue of
 * agents' digest (AGENT.md §8: each node reads its own agent config; a session taken over by a node
 * whose catalogue lacks its agent fails its turns there).
 */
export async function nodesCommand(home: string, json: boolean): Promise<number> {
  return withDaemon(home, 'cluster', async (client) => {
    const status = await client.call<{ cluster?: { node_id: string; nodes: ClusterNode[] } }>('host.status', {});
    if (status.cluster === undefined) {
      process.stderr.write(`turnhost cluster: the daemon in ${home} is not a node of a cluster (--node-id on a PostgreSQL store)\n`);
      return 1;
    }
    if (json) process.stdout.write(`${JSON.stringify(status.cluster.nodes)}\n`);
    else printTable(['NODE', 'URL', 'HEARTBEAT', 'SESSIONS', 'AGENTS'], status.cluster.nodes.map((n) => [n.node_id, n.url ?? '', `${n.heartbeat_age_ms} ms ago`, n.sessions, n.catalogue ?? '']));
    return 0;
  });
}

export async function rotateSecretCommand(store: string | undefined): Promise<number> {
  const location = storeLocation(store, '');
  if (location.kind !== 'postgres') {
    process.stderr.write('turnhost cluster rotate-secret: a cluster lives in PostgreSQL: give --store postgres://… (or $TURNHOST_STORE)\n');
    return 2;
  }
  const client = new pg.Client(clientConfig(location, 'cluster'));
  client.on('error', () => {});
  try {
    await client.connect();
    const result = await client.query(`UPDATE cluster_secret SET secret = ${NEW_CLUSTER_SECRET}`);
    if (result.rowCount !== 1) {
      process.stderr.write(`turnhost cluster rotate-secret: ${location.shown} has no cluster secret yet (no node has started on it)\n`);
      return 1;
    }
  } catch (err) {
    process.stderr.write(`turnhost cluster rotate-secret: ${described(err as Error).message}\n`);
    return 1;
  } finally {
    await client.end().catch(() => {});
  }
  process.stdout.write(`the cluster secret of ${location.shown} was replaced: every node takes the new one within ${SECRET_REFRESH_MS / 1000} s, and the links made with the old one end\n`);
  return 0;
}
