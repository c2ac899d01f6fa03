// Shared by the benchmarks: paths, temp folders, results files, tables.
import { cpus } from 'node:os';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { formatTable, type Cell } from '../bin/table.js';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const CLI = join(ROOT, 'dist', 'bin', 'turnhost.js');
export const RESULTS = join(ROOT, 'bench', 'results');

export function machine() {
  return { node: process.version, cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown' };
}

export async function withTempDir<T>(body: (dir: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'turnhost-bench-'));
  try {
    return await body(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export function writeResult(name: string, result: unknown): string {
  mkdirSync(RESULTS, { recursive: true });
  const file = join(RESULTS, `${name}.json`);
  writeFileSync(file, `${JSON.stringify({ date: new Date().toISOString(), machine: machine(), ...(result as object) }, null, 2)}\n`);
  return file;
}

export function printTable(title: string, headers: string[], rows: Cell[][]): void {
  process.stdout.write(`\n${title}\n${formatTable(headers, rows)}`);
}

export const round = (value: number, digits = 0) => Number(value.toFixed(digits));

export function verdict(ok: boolean): string {
  return ok ? 'met' : 'MISSED';
}

/**
 * This machine's speed drifts by a fifth from one run to the next, more than some costs measured:
 * a bench runs what it compares in interleaved rounds, and reports each figure's median.
 */
export const ROUNDS = 3;

/** The middle value (the upper one of an even count). */
export function median(values: readonly number[]): number {
  return values.slice().sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
}

/** "lowest–highest", rounded: the spread of a measure over rounds. */
export function range(values: readonly number[], digits = 0): string {
  return `${round(Math.min(...values), digits)}–${round(Math.max(...values), digits)}`;
}

/** A process's resident memory (VmRSS), MiB; null when it is gone or unknown. */
export function rssMiB(pid: number | null): number | null {
  if (pid === null) return null;
  try {
    const kib = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kib === undefined ? null : Number(kib) / 1024;
  } catch {
    return null;
  }
}
