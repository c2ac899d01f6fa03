// What the agent needs is visible (AGENT.md §7), as a function of the files on disk: a command on
// the PATH under a person's home, its links and its `#!` interpreter, and the paths its arguments
// name, are bound back by their install prefix, project or folder, and never by a whole home or
// anything sealed. The homes here are a temp folder's `home/`, standing for /home.
import { expect } from 'chai';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { neededPaths, type Walls } from '../../agents/sandbox/visible-paths.js';

describe('what an agent needs, bound back through the sandbox (agents/sandbox/visible-paths.ts)', () => {
  let root: string;
  let walls: Walls;
  const file = (path: string, text = '', mode = 0o644): string => {
    const at = join(root, path);
    mkdirSync(dirname(at), { recursive: true });
    writeFileSync(at, text);
    chmodSync(at, mode);
    return at;
  };
  const link = (path: string, target: string): string => {
    const at = join(root, path);
    mkdirSync(dirname(at), { recursive: true });
    symlinkSync(target, at);
    return at;
  };

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'turnhost-visible-'));
    walls = { hidden: [join(root, 'home'), join(root, 'turnhost')], sealed: [join(root, 'turnhost')], visible: [], homes: [join(root, 'home')] };
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('an nvm install: the command on the PATH, its link into lib/ and `#!/usr/bin/env node` bind the prefix alone', () => {
    const prefix = join(root, 'home/ann/.nvm/versions/node/v20');
    file('home/ann/.nvm/versions/node/v20/lib/node_modules/agent/dist/index.js', '#!/usr/bin/env node\n', 0o755);
    link('home/ann/.nvm/versions/node/v20/bin/agent-acp', '../lib/node_modules/agent/dist/index.js');
    file('home/ann/.nvm/versions/node/v20/bin/node', '', 0o755);
    file('home/ann/.ssh/id_ed25519', 'secret');
    const reach = neededPaths('agent-acp', [], `${join(prefix, 'bin')}:/usr/bin:/bin`, walls);
    expect(reach).to.deep.equal({ expose: [prefix], unreachable: [] });
  });

  it('a script of a person\'s own agent binds its folder, or its project when it has one; never the whole home', () => {
    const guest = file('home/ann/agent/guest.py', 'print()');
    expect(neededPaths('python3', [guest], '/usr/bin:/bin', walls).expose).to.deep.equal([join(root, 'home/ann/agent')]);
    const fixture = file('home/ann/turnhost/test/fixtures/guest.mjs');
    file('home/ann/turnhost/package.json', '{}');
    expect(neededPaths('node', [fixture], '/usr/bin:/bin', walls).expose).to.deep.equal([join(root, 'home/ann/turnhost')]);
    // A script lying in the home itself is bound alone: its folder is the whole home.
    file('home/ann/package.json', '{}');
    const loose = file('home/ann/loose.py');
    expect(neededPaths('python3', [loose], '/usr/bin:/bin', walls).expose).to.deep.equal([loose]);
  });

  it('a pyenv shim binds the whole of ~/.pyenv: the folder above the PATH\'s folder that holds it', () => {
    file('home/ann/.pyenv/shims/python3', '#!/usr/bin/env bash\n', 0o755);
    const reach = neededPaths('python3', [], `${join(root, 'home/ann/.pyenv/shims')}:/usr/bin:/bin`, walls);
    expect(reach).to.deep.equal({ expose: [join(root, 'home/ann/.pyenv')], unreachable: [] });
  });

  it('a command in ~/bin binds ~/bin, not the home above it', () => {
    const tool = file('home/ann/bin/tool', '#!/bin/sh\n', 0o755);
    expect(neededPaths(tool, [], '/usr/bin:/bin', walls).expose).to.deep.equal([join(root, 'home/ann/bin')]);
  });

  it('names what stays hidden: a sealed place, and a whole home given as an argument', () => {
    const inHome = file('turnhost/agent.py');
    expect(neededPaths('python3', [inHome], '/usr/bin:/bin', walls)).to.deep.equal({ expose: [], unreachable: [inHome] });
    mkdirSync(join(root, 'home/ann'), { recursive: true });
    expect(neededPaths('python3', [join(root, 'home/ann')], '/usr/bin:/bin', walls).unreachable).to.deep.equal([join(root, 'home/ann')]);
  });

  it('binds nothing for what is visible already: the system, read_only, missing paths and words that are not paths', () => {
    const tools = file('home/ann/tools/run.py');
    const seen = { ...walls, visible: [join(root, 'home/ann/tools')] };
    expect(neededPaths('python3', [tools, '--model', 'x', '/no/such/file'], '/usr/bin:/bin', seen)).to.deep.equal({ expose: [], unreachable: [] });
  });

  it('keeps the outermost of nested bindings, once', () => {
    const prefix = join(root, 'home/ann/.local');
    file('home/ann/.local/bin/pipx-agent', '#!/bin/sh\n', 0o755);
    const data = file('home/ann/.local/share/agent/data.json');
    expect(neededPaths(join(prefix, 'bin/pipx-agent'), [data, dirname(data)], '', walls).expose).to.deep.equal([prefix]);
  });
});
