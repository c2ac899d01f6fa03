// Nodes of a cluster for the tests of test/cluster/: real daemons with their edges on 127.0.0.1,
// on one PostgreSQL, and socket clients of them that the suite closes after each test.
import { startDaemon, TestClient, type Daemon } from './daemon.js';
import type { Harness } from './processes.js';

/** A node's arguments: the store, its id and a short lease, so that tests wait seconds for an expiry. */
export function nodeArgs(url: string, id: string, leaseSecs: number): string[] {
  return ['--store', url, '--node-id', id, '--lease-secs', String(leaseSecs)];
}

/** The node's HTTP edge, as its status gives it. */
export async function edgeUrl(daemon: Daemon): Promise<string> {
  const client = await TestClient.connect(daemon);
  try {
    return (await client.call<{ http: { url: string } }>('host.status')).http.url;
  } finally {
    client.close();
  }
}

/** For a suite: daemons as nodes, and clients of them closed (with the harness cleaned) after each test. */
export function clusterForSuite(h: Harness, leaseSecs: number) {
  const clients: TestClient[] = [];
  afterEach(async () => {
    for (const client of clients.splice(0)) client.close();
    await h.cleanup();
  });
  return {
    daemons(url: string, ids: readonly string[], extra: readonly string[] = []): Promise<Daemon[]> {
      return Promise.all(ids.map((id) => startDaemon(h, [...nodeArgs(url, id, leaseSecs), '--listen', '127.0.0.1:0', ...extra])));
    },
    async clientOf(daemon: Daemon): Promise<TestClient> {
      const client = await TestClient.connect(daemon);
      clients.push(client);
      return client;
    },
  };
}
