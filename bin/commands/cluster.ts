// `turnhost cluster rotate-secret --store URL`: replaces the secret the nodes of a cluster prove to
// each other (PROTOCOL.md §6.2). Every node reads it again within a heartbeat; the links made with
// the old one end, and the next ones prove the new one. The secret is never printed.
import pg from 'pg';
import { clientConfig, described } from '../../persistence/postgres/connection.js';
import { NEW_CLUSTER_SECRET } from '../../persistence/postgres/schema.js';
import { storeLocation } from '../../persistence/store-location.js';
import { SECRET_REFRESH_MS } from '../../actors/daemon/cluster-secret.js';

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
