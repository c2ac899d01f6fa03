// What the agent needs is visible (AGENT.md §7): people install agents under their home (nvm's
// `~/.nvm/versions/node/<v>/`, pipx's `~/.local/`, a clone of their own agent), which the sandbox
// hides. Before a sandboxed process starts, its command is resolved (PATH, each symbolic link on
// the way, a script's `#!` interpreter) and so is each argument naming an existing path; what of
// them lies in a hidden place is bound back read-only: a command's install prefix (the folder
// above its `bin/`, or above the PATH's folder that holds it, as pyenv's `shims/`: so its `lib/`
// and versions come too), a script's project (the nearest folder with a
// package.json or pyproject.toml) or else its folder, an argument's folder. Never a whole home
// (`/home/<user>`, /root), never anything under the turnhost home, the workspaces root or
// `sandbox.hidden`: what still lies out of reach is named, and the turn fails saying so.
import { accessSync, closeSync, constants, existsSync, lstatSync, openSync, readlinkSync, readSync, statSync } from 'node:fs';
import { basename, delimiter, dirname, isAbsolute, join, resolve } from 'node:path';
import { outermost, within } from './bubblewrap.js';

/** The sandbox's walls, as the resolution must respect them. */
export interface Walls {
  /** Places that are empty inside (/tmp, /run, /home, /root, the turnhost home, the workspaces root, `sandbox.hidden`). */
  hidden: readonly string[];
  /** Places never bound back this way, and hidden again under anything that is (the turnhost home, the workspaces root, `sandbox.hidden`). */
  sealed: readonly string[];
  /** What is visible inside already (`sandbox.read_only`, the sandbox's own folder and home). */
  visible: readonly string[];
  /** Folders whose entries are people's whole homes, never bound whole (/home). */
  homes: readonly string[];
}

export interface Reach {
  /** Folders (or files) to bind read-only at their own paths. */
  expose: string[];
  /** Paths the process names that stay hidden: it would not find them. */
  unreachable: string[];
}

/** The folders a project's root is known by. */
const PROJECT_MARKERS = ['package.json', 'pyproject.toml'];
/** A `#!` line is read this far; a script whose interpreter is itself a script is followed this deep. */
const SHEBANG_BYTES = 256;
const MAX_INTERPRETERS = 4;

/** What `command args` needs to see, given the PATH it is started with. */
export function neededPaths(command: string, args: readonly string[], path: string | undefined, walls: Walls): Reach {
  const reach: Reach = { expose: [], unreachable: [] };
  const binFolders = new Set((path ?? '').split(delimiter).filter((dir) => isAbsolute(dir)).map((dir) => resolve(dir)));
  const found = (file: string, kind: 'program' | 'argument'): void => note(file, kind, walls, reach, binFolders);
  followProgram(command, path, found, 0);
  for (const arg of args) {
    if (isAbsolute(arg) && existsSync(arg)) for (const hop of linkChain(arg)) found(hop, 'argument');
  }
  reach.expose = outermost(reach.expose);
  reach.unreachable = [...new Set(reach.unreachable)];
  return reach;
}

/** The command's file and every link to it, then its interpreter's, as far as they resolve. */
function followProgram(command: string, path: string | undefined, found: (file: string, kind: 'program') => void, depth: number): void {
  const file = onPath(command, path);
  if (file === null) return;
  const chain = linkChain(file);
  for (const hop of chain) found(hop, 'program');
  if (depth >= MAX_INTERPRETERS) return;
  const interpreter = shebang(chain.at(-1)!);
  if (interpreter === null) return;
  // `#!/usr/bin/env node`: the program is `node` on the PATH, as env would find it.
  const [first, ...rest] = interpreter;
  followProgram(first!, path, found, depth + 1);
  if (basename(first!) === 'env') {
    const program = rest.filter((word) => !word.startsWith('-') && !word.includes('='))[0];
    if (program !== undefined) followProgram(program, path, found, depth + 1);
  }
}

/** Where the command is: itself when it names a path, else the first executable of that name on the PATH. */
function onPath(command: string, path: string | undefined): string | null {
  if (command.includes('/')) return existsSync(command) ? resolve(command) : null;
  for (const dir of (path ?? '').split(delimiter)) {
    if (!isAbsolute(dir)) continue;
    const candidate = join(dir, command);
    try {
      accessSync(candidate, constants.X_OK);
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // Not here: the next folder of the PATH.
    }
  }
  return null;
}

/** The path, then each symbolic link's target in turn (absolute), ending at the real file; a loop ends it. */
function linkChain(start: string): string[] {
  const chain = [resolve(start)];
  for (let hop = 0; hop < 40; hop++) {
    const at = chain.at(-1)!;
    let target: string;
    try {
      if (!lstatSync(at).isSymbolicLink()) break;
      target = readlinkSync(at);
    } catch {
      break;
    }
    chain.push(resolve(dirname(at), target));
  }
  return chain;
}

/** A script's `#!` line split into words (the interpreter, then its argument), or null. */
function shebang(file: string): string[] | null {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return null;
  }
  try {
    const head = Buffer.alloc(SHEBANG_BYTES);
    const read = readSync(fd, head, 0, SHEBANG_BYTES, 0);
    const text = head.subarray(0, read).toString('utf8');
    if (!text.startsWith('#!')) return null;
    const words = text.slice(2).split('\n')[0]!.trim().split(/\s+/).filter((word) => word !== '' && word !== '-S');
    return words.length > 0 && isAbsolute(words[0]!) ? words : null;
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

/** Decides what of `file` must be bound for it to be seen, or that it cannot be. */
function note(file: string, kind: 'program' | 'argument', walls: Walls, reach: Reach, binFolders: ReadonlySet<string>): void {
  if (walls.visible.some((place) => within(file, place))) return;
  const place = hiddenPlaceOf(file, walls.hidden);
  if (place === null) return;
  if (walls.sealed.some((sealed) => within(file, sealed))) {
    reach.unreachable.push(file);
    return;
  }
  const exposure = exposureOf(file, kind, place, walls, binFolders);
  if (exposure === null) reach.unreachable.push(file);
  else reach.expose.push(exposure);
}

/** The deepest hidden place `file` lies in, or null when it is visible as all of `/` is. */
function hiddenPlaceOf(file: string, hidden: readonly string[]): string | null {
  const holding = hidden.filter((place) => within(file, place));
  return holding.length === 0 ? null : holding.reduce((a, b) => (b.length > a.length ? b : a));
}

function exposureOf(file: string, kind: 'program' | 'argument', place: string, walls: Walls, binFolders: ReadonlySet<string>): string | null {
  const may = (candidate: string): boolean =>
    candidate !== place && within(candidate, place) && !walls.homes.includes(dirname(candidate)) && !walls.sealed.some((sealed) => within(candidate, sealed));
  let isDirectory = false;
  try {
    isDirectory = statSync(file).isDirectory();
  } catch {
    // A dangling link on the way: its folder is what a reader would look in.
  }
  if (isDirectory) return may(file) ? file : null;
  const folder = dirname(file);
  const isBin = ['bin', 'sbin'].includes(basename(folder)) || binFolders.has(folder);
  if (kind === 'program' && isBin && may(dirname(folder))) return dirname(folder);
  const project = projectOf(folder, may);
  if (project !== null) return project;
  if (may(folder)) return folder;
  return may(file) ? file : null;
}

/** The nearest folder from `folder` up that holds a project's manifest, while bound folders may be bound. */
function projectOf(folder: string, may: (candidate: string) => boolean): string | null {
  for (let at = folder; may(at); at = dirname(at)) {
    if (PROJECT_MARKERS.some((marker) => existsSync(join(at, marker)))) return at;
  }
  return null;
}
