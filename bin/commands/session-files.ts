// `turnhost export ID [--out FILE]` and `turnhost import FILE [--as ID]` (PROTOCOL.md §2.3), on the
// home's store itself, daemon up or down: the export reads one snapshot of the session; the import
// checks the whole file, then writes the new session in one transaction, owned by the home's owner.
import { randomBytes } from 'node:crypto';
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { readCatalogue } from '../../agents/catalogue-config.js';
import { ImportError, ImportRefused, parseExport, type ImportPlan } from '../../persistence/session-export.js';
import { storeLocation } from '../../persistence/store-location.js';
import { openReader } from '../../persistence/open-store.js';
import { homePaths } from '../../protocol/home-paths.js';
import { withSideStore } from '../side-store-command.js';
import { EXIT_UNKNOWN_SESSION } from './sessions.js';

export async function exportCommand(home: string, sid: string, options: { out?: string; store?: string }): Promise<number> {
  let lines;
  const reader = await openReader(storeLocation(options.store, homePaths(home).database)).catch((err: Error) => err);
  if (reader instanceof Error) {
    process.stderr.write(`turnhost export: ${reader.message}\n`);
    return 1;
  }
  try {
    lines = await reader?.exportSession(sid);
  } finally {
    await reader?.close();
  }
  if (lines === undefined) {
    process.stderr.write(`turnhost export: unknown session: ${sid}\n`);
    return EXIT_UNKNOWN_SESSION;
  }
  const text = lines.map((line) => `${JSON.stringify(line)}\n`).join('');
  if (options.out === undefined) {
    process.stdout.write(text);
    return 0;
  }
  // Whole or not at all: a file that is there is a whole export.
  const partial = join(dirname(options.out), `.${randomBytes(4).toString('hex')}.partial`);
  try {
    writeFileSync(partial, text, { mode: 0o600 });
    renameSync(partial, options.out);
  } catch (err) {
    rmSync(partial, { force: true });
    process.stderr.write(`turnhost export: ${(err as Error).message}\n`);
    return 1;
  }
  const messages = lines.filter((line) => 'message' in line).length;
  process.stderr.write(`${sid}: ${messages} message(s) and ${lines.length - 1 - messages} turn(s) written to ${options.out}\n`);
  return 0;
}

export async function importCommand(home: string, file: string, options: { as?: string; store?: string }): Promise<number> {
  let plan: ImportPlan;
  try {
    plan = parseExport(readFileSync(file, 'utf8'));
  } catch (err) {
    const why = err instanceof ImportError ? `${err.message}; nothing imported` : (err as Error).message;
    process.stderr.write(`turnhost import: ${file}: ${why}\n`);
    return 1;
  }
  plan.source.agent = await agentHere(home, plan.source.agent);
  const sid = options.as ?? `s-${randomBytes(6).toString('hex')}`;
  const made = await withSideStore(home, options, 'import', async (side) => {
    try {
      return await side.importSession(plan, { sid, sessionKey: `sk-${randomBytes(6).toString('hex')}`, owner: null });
    } catch (err) {
      if (err instanceof ImportRefused) throw new Error(`${err.message}: give another with --as`);
      throw err;
    }
  });
  if (made === null) return 1;
  const renamed = made.turn_ids === 'renamed' ? ' (its turns have new ids: this store holds the originals)' : '';
  process.stdout.write(`${made.session_id}: imported ${made.messages} message(s), ${made.turns} turn(s)${renamed}\n`);
  return 0;
}

/** The file's agent when this home's catalogue has it; else null, the default agent (as a session stored before there were several). */
async function agentHere(home: string, agent: string | null): Promise<string | null> {
  if (agent === null) return null;
  try {
    return (await readCatalogue(undefined, { home, env: process.env })).definitions.has(agent) ? agent : null;
  } catch {
    return null;
  }
}
