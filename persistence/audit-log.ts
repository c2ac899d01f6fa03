// `<home>/logs/audit.log` (PROTOCOL.md §5.6): one JSON record per action, never a token. The
// records of one event-loop turn leave in one write (each whole, on an O_APPEND descriptor, so no
// other writer lands inside one): at 64 busy sessions a write per submit was a fifth of the
// daemon's work a turn. A crash loses at most the records of the loop turn it cut.
import { AUDIT_KEPT_FILES, AUDIT_ROTATE_BYTES, LogFile } from './log.js';

export class AuditLog {
  private readonly file: LogFile;
  private held: string[] = [];
  private flushing: NodeJS.Immediate | null = null;

  constructor(path: string) {
    this.file = new LogFile(path, AUDIT_ROTATE_BYTES, AUDIT_KEPT_FILES);
  }

  append(record: object): void {
    this.held.push(`${JSON.stringify({ at: new Date().toISOString(), ...record })}\n`);
    this.flushing ??= setImmediate(() => this.flush());
  }

  close(): void {
    if (this.flushing !== null) clearImmediate(this.flushing);
    this.flush();
    this.file.close();
  }

  private flush(): void {
    this.flushing = null;
    if (this.held.length === 0) return;
    const text = this.held.join('');
    this.held = [];
    this.file.append(text);
  }
}
