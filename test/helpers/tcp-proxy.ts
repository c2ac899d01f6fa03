// A TCP proxy between turnhost and PostgreSQL, for what a network fault does to one process alone
// (a restart of the server does it to all). `cut()` ends every connection through it at once,
// wherever its transactions are, as a switch that drops a link would; new ones pass.
// `loseCommitAnswer(marker)` makes the next transaction whose statements carry `marker` commit on
// the server while its client never hears so: the connection is reset as the server's "COMMIT"
// comes back, and, with `downMs`, every connection for that long after (the server restarting:
// the fault that left a queue held for ever in a chaos run, issue 45).
import { connect, createServer, type Server, type Socket } from 'node:net';

/** PostgreSQL's CommandComplete for COMMIT: 'C', its length (4 + "COMMIT\0"), the tag. */
const COMMIT_COMPLETE = Buffer.concat([Buffer.from([0x43, 0, 0, 0, 11]), Buffer.from('COMMIT\0')]);

export class TcpProxy {
  /** The marker a transaction must carry to lose its COMMIT's answer; null when none is armed. */
  private armed: { marker: Buffer; downMs: number } | null = null;
  /** Until then, every new connection is reset at once. */
  private downUntil = 0;
  /** How many COMMIT answers were lost. */
  lostAnswers = 0;

  private constructor(
    private readonly server: Server,
    /** Both ends of every connection that passes now. */
    private readonly open: Set<Socket>,
    readonly port: number,
  ) {}

  static async start(targetPort: number): Promise<TcpProxy> {
    const open = new Set<Socket>();
    let proxy: TcpProxy | null = null;
    const server = createServer((client) => {
      if (Date.now() < proxy!.downUntil) {
        client.resetAndDestroy();
        return;
      }
      const upstream = connect(targetPort, '127.0.0.1');
      proxy!.relay(client, upstream);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    proxy = new TcpProxy(server, open, (server.address() as { port: number }).port);
    return proxy;
  }

  /** Every connection through the proxy ends now (a reset, not a goodbye); returns how many. */
  cut(): number {
    const count = this.open.size / 2;
    for (const socket of [...this.open]) socket.resetAndDestroy();
    return count;
  }

  /**
   * The next transaction that carries `marker` commits, and its connection is reset before the
   * client hears it did; then no connection passes for `downMs`.
   */
  loseCommitAnswer(marker: string, downMs = 0): void {
    this.armed = { marker: Buffer.from(marker), downMs };
  }

  close(): Promise<void> {
    this.cut();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private relay(client: Socket, upstream: Socket): void {
    let doomed: { downMs: number } | null = null;
    // The client's bytes: a transaction that carries the armed marker dooms its connection's next COMMIT answer.
    this.join(client, upstream, (chunk) => {
      if (this.armed !== null && chunk.includes(this.armed.marker)) {
        doomed = this.armed;
        this.armed = null;
      }
      return true;
    });
    this.join(upstream, client, (chunk) => {
      if (doomed === null || !chunk.includes(COMMIT_COMPLETE)) return true;
      // The server committed; its answer goes nowhere, and the server seems gone for a while.
      this.lostAnswers++;
      this.downUntil = Date.now() + doomed.downMs;
      this.cut();
      return false;
    });
  }

  /** `from`'s bytes go to `to` while `pass` allows; when either side ends, so does the other. */
  private join(from: Socket, to: Socket, pass: (chunk: Buffer) => boolean): void {
    this.open.add(from);
    from.on('data', (chunk: Buffer) => {
      if (pass(chunk) && !to.destroyed) to.write(chunk);
    });
    from.on('error', () => to.destroy());
    from.on('close', () => {
      this.open.delete(from);
      to.destroy();
    });
  }
}
