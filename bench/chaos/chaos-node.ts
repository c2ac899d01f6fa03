// One node of the chaos run: a `turnhost daemon` in its own home with its edge on a fixed port (so
// that it comes back where its peers and clients look for it), and what the run does to it: kill
// -9 of the whole node (daemon and host), SIGSTOP and SIGCONT of both, and a start again in its home.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI } from '../common.js';

/** A start waits this long for its host: a node may first wait for its own lock (nodeLockWaitMs). */
const START_TIMEOUT_MS = 45_000;

export class ChaosNode {
  private daemon: ChildProcess | null = null;
  paused = false;

  constructor(
    readonly id: string,
    readonly home: string,
    readonly edgePort: number,
    private readonly storeUrl: string,
    private readonly leaseSecs: number,
  ) {}

  get socket(): string {
    return join(this.home, 'turnhost.sock');
  }

  get running(): boolean {
    return this.daemon !== null && this.daemon.exitCode === null && this.daemon.signalCode === null;
  }

  /** Starts the daemon and resolves once its host said hello; its log goes to the home's log file only. */
  async start(): Promise<void> {
    const daemon = spawn(
      process.execPath,
      [CLI, 'daemon', '--home', this.home, '--store', this.storeUrl, '--node-id', this.id, '--lease-secs', String(this.leaseSecs), '--listen', `127.0.0.1:${this.edgePort}`],
      { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, TURNHOST_LOG_LEVEL: 'info' } },
    );
    this.daemon = daemon;
    this.paused = false;
    await new Promise<void>((resolve, reject) => {
      let seen = '';
      const timer = setTimeout(() => reject(new Error(`node ${this.id}: no host within ${START_TIMEOUT_MS} ms: ${seen.slice(-1000)}`)), START_TIMEOUT_MS);
      const onData = (chunk: Buffer): void => {
        seen = (seen + chunk.toString()).slice(-4000);
        if (!seen.includes('"msg":"host ready"')) return;
        clearTimeout(timer);
        daemon.stderr!.off('data', onData);
        daemon.stderr!.resume(); // read and dropped from here: the home's log file has it all
        resolve();
      };
      daemon.stderr!.on('data', onData);
      daemon.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`node ${this.id}: the daemon exited (${code ?? signal}) before its host was ready: ${seen.slice(-1000)}`));
      });
    });
  }

  /** kill -9 of the daemon and of its host's process group, as a machine that loses power. */
  async kill(): Promise<void> {
    const hostPid = this.hostPid();
    const daemon = this.daemon;
    const alive = daemon !== null && this.running;
    const exited = alive ? new Promise((resolve) => daemon.once('exit', resolve)) : Promise.resolve();
    // Both signals at once: a host that outlived its daemon by a moment would see its stdin close and stop cleanly.
    if (hostPid !== null) signalGroup(hostPid, 'SIGKILL');
    if (alive) daemon.kill('SIGKILL');
    await exited;
    this.paused = false;
  }

  /** SIGSTOP (or SIGCONT) of the daemon and its host: a node that stops answering, then comes back. */
  pause(paused: boolean): void {
    const signal = paused ? 'SIGSTOP' : 'SIGCONT';
    const hostPid = this.hostPid();
    if (this.daemon?.pid !== undefined && this.running) process.kill(this.daemon.pid, signal);
    if (hostPid !== null) signalGroup(hostPid, signal);
    this.paused = paused;
  }

  /** A clean stop at the end of the run. */
  async stop(): Promise<void> {
    if (this.paused) this.pause(false);
    const daemon = this.daemon;
    if (daemon === null || !this.running) return;
    const exited = new Promise((resolve) => daemon.once('exit', resolve));
    daemon.kill('SIGTERM');
    const timer = setTimeout(() => daemon.kill('SIGKILL'), 30_000);
    await exited;
    clearTimeout(timer);
  }

  /** The host the daemon last registered (PROTOCOL.md: the registry), or null. */
  private hostPid(): number | null {
    try {
      const registry = JSON.parse(readFileSync(join(this.home, 'state', 'compute-host.json'), 'utf8')) as { host_pid?: number };
      return typeof registry.host_pid === 'number' ? registry.host_pid : null;
    } catch {
      return null;
    }
  }
}

/** The host runs in a process group of its own (with whatever it spawned). */
function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // gone already
  }
}
