// Files another process writes, as tests read them: every file under a folder (for tests that grep a
// whole home for what must not be there), and a file awaited until it holds what a test waits for.
import { readdirSync, readFileSync, statSync, watch } from 'node:fs';
import { dirname, join } from 'node:path';

export function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    const stat = statSync(path, { throwIfNoEntry: false });
    if (stat === undefined) return [];
    return stat.isDirectory() ? filesUnder(path) : stat.isFile() ? [path] : [];
  });
}

/**
 * Resolves with the file's text once `met` holds for it. It is read now, then again at each change
 * the kernel reports in its folder (inotify): a write is seen as it lands, with nothing polled. Fails
 * after `timeoutMs`, naming what was awaited and ending with what the file held.
 */
export function fileWhere(path: string, met: (text: string) => boolean, what: string, timeoutMs = 10_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const read = (): string | null => {
      try {
        return readFileSync(path, 'utf8');
      } catch {
        return null; // not written yet
      }
    };
    // Watching before the first read: a write between the two is not missed.
    const watcher = watch(dirname(path));
    const end = (): void => {
      clearTimeout(timer);
      watcher.close();
    };
    const check = (): void => {
      const text = read();
      if (text === null || !met(text)) return;
      end();
      resolve(text);
    };
    const timer = setTimeout(() => {
      end();
      reject(new Error(`no ${what} in ${path} within ${timeoutMs} ms; it held: ${(read() ?? '(no file)').slice(-2000)}`));
    }, timeoutMs);
    watcher.on('change', check);
    watcher.on('error', (err) => {
      end();
      reject(err);
    });
    check();
  });
}
