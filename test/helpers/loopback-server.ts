// An HTTP server on 127.0.0.1 for the fake model APIs: a free port, every request's body read
// whole, and a close that does not wait for a client that keeps its connection open.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export type BodyHandler = (req: IncomingMessage, body: Buffer, res: ServerResponse) => void | Promise<void>;

export class LoopbackServer {
  private readonly sockets = new Set<Socket>();

  private constructor(private readonly server: Server) {
    server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
  }

  static async start(handle: BodyHandler): Promise<LoopbackServer> {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => void handle(req, Buffer.concat(chunks), res));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return new LoopbackServer(server);
  }

  get origin(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
