// A collector for `npm run bench -- host`'s traced host: an OTLP/HTTP endpoint on 127.0.0.1 that
// answers every export 200 and keeps only counts, so the bench measures the host's side of tracing.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export class OtlpSink {
  exports = 0;
  bytes = 0;

  private constructor(private readonly server: Server) {}

  static async start(): Promise<OtlpSink> {
    let sink: OtlpSink | undefined;
    const server = createServer((req, res) => {
      req.on('data', (chunk: Buffer) => (sink!.bytes += chunk.length));
      req.on('end', () => {
        sink!.exports++;
        res.writeHead(200, { 'content-type': 'application/x-protobuf' });
        res.end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    sink = new OtlpSink(server);
    return sink;
  }

  get endpoint(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
