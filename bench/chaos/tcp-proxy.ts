// A TCP proxy the chaos run puts between one node and PostgreSQL: what a network fault does to
// one node alone (a restart of the server does it to all). `cut()` ends every connection through
// it at once, wherever its transactions are, as a switch that drops a link would; new ones pass.
import { connect, createServer, type Server, type Socket } from 'node:net';

export class TcpProxy {
  private constructor(
    private readonly server: Server,
    /** Both ends of every connection that passes now. */
    private readonly open: Set<Socket>,
    readonly port: number,
  ) {}

  static async start(targetPort: number): Promise<TcpProxy> {
    const open = new Set<Socket>();
    const server = createServer((client) => {
      const upstream = connect(targetPort, '127.0.0.1');
      join(client, upstream, open);
      join(upstream, client, open);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    return new TcpProxy(server, open, (server.address() as { port: number }).port);
  }

  /** Every connection through the proxy ends now (a reset, not a goodbye); returns how many. */
  cut(): number {
    const count = this.open.size / 2;
    for (const socket of [...this.open]) socket.resetAndDestroy();
    return count;
  }

  close(): Promise<void> {
    this.cut();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** `from`'s bytes go to `to`; when either side ends, so does the other. */
function join(from: Socket, to: Socket, open: Set<Socket>): void {
  open.add(from);
  from.pipe(to);
  from.on('error', () => to.destroy());
  from.on('close', () => {
    open.delete(from);
    to.destroy();
  });
}
