// The sandbox's argument list (AGENT.md §7) is a pure function of the session's places and the
// config: the walls, the mounts in the order that makes each hide what it must, and a command that
// reaches bubblewrap as arguments, never as shell text. The escapes themselves are tried for real
// in test/integration/sandbox-escapes.test.ts.
import { expect } from 'chai';
import { bwrapArgs, FOLDER_FD, INSIDE_PROXY_DIR } from '../../agents/sandbox/bubblewrap.js';
import type { SandboxConfig } from '../../agents/sandbox/sandbox-config.js';

const HOME = '/srv/turnhost';
const config = (overrides: Partial<SandboxConfig> = {}): SandboxConfig => ({
  mode: 'required',
  allowHosts: [],
  readOnly: ['/opt/tools'],
  memoryBytes: 1 << 30,
  maxOpenFiles: 256,
  workspacesRoot: `${HOME}/workspaces`,
  hidden: [],
  home: HOME,
  ...overrides,
});
const places = { folder: `${HOME}/workspaces/alice/s1`, folderByFd: false, exposed: [], agentHome: `${HOME}/agent-homes/s1`, proxyDir: `${HOME}/run/ab12` };

/** The argument list's options up to `--`, as [option, ...its values] groups. */
function options(argv: readonly string[]): string[][] {
  const arity: Record<string, number> = { '--ro-bind': 2, '--ro-bind-try': 2, '--bind': 2, '--bind-fd': 2, '--dev': 1, '--proc': 1, '--tmpfs': 1, '--chdir': 1, '--cap-drop': 1 };
  const groups: string[][] = [];
  for (let i = 0; argv[i] !== '--'; i++) {
    const n = arity[argv[i]!] ?? 0;
    groups.push(argv.slice(i, i + 1 + n));
    i += n;
  }
  return groups;
}

describe('the sandbox argument list (agents/sandbox/bubblewrap.ts)', () => {
  it('has every wall of AGENT.md §7: its own namespaces, no capabilities, no new user namespaces, a new session, death with its parent', () => {
    const flags = options(bwrapArgs(config(), places, 'agent', [])).map((group) => group.join(' '));
    for (const wall of ['--unshare-user', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-net', '--cap-drop ALL', '--disable-userns', '--die-with-parent', '--new-session']) {
      expect(flags, wall).to.include(wall);
    }
    expect(flags.filter((f) => f.startsWith('--share') || f === '--unshare-all')).to.deep.equal([]);
  });

  const mountsOf = (argv: readonly string[]): string[] =>
    options(argv).filter((g) => ['--ro-bind', '--ro-bind-try', '--bind', '--bind-fd', '--tmpfs'].includes(g[0]!)).map((g) => g.join(' '));

  it('mounts / read-only, hides /tmp, /run, /home, /root and the home, then binds back only the folder, the agent home and the proxy', () => {
    expect(mountsOf(bwrapArgs(config(), places, 'agent', []))).to.deep.equal([
      '--ro-bind / /',
      '--tmpfs /tmp',
      '--tmpfs /run',
      '--tmpfs /home',
      '--tmpfs /root',
      `--tmpfs ${HOME}`,
      '--ro-bind-try /opt/tools /opt/tools',
      `--bind ${places.folder} ${places.folder}`,
      `--bind ${places.agentHome} ${places.agentHome}`,
      `--ro-bind ${places.proxyDir} ${INSIDE_PROXY_DIR}`,
    ]);
    expect(options(bwrapArgs(config(), places, 'agent', [])).at(-1)).to.deep.equal(['--chdir', places.folder]);
  });

  it('hides the workspaces root and sandbox.hidden wherever they lie, before anything is bound back', () => {
    const elsewhere = config({ workspacesRoot: '/var/tmp/ws', hidden: ['/etc/turnhost', '/srv/backup'] });
    const folder = { ...places, folder: '/var/tmp/ws/alice/s1' };
    const mounts = mountsOf(bwrapArgs(elsewhere, folder, 'agent', []));
    expect(mounts.slice(0, 9)).to.deep.equal(['--ro-bind / /', '--tmpfs /tmp', '--tmpfs /run', '--tmpfs /home', '--tmpfs /root', `--tmpfs ${HOME}`, '--tmpfs /var/tmp/ws', '--tmpfs /etc/turnhost', '--tmpfs /srv/backup']);
    expect(mounts).to.include('--bind /var/tmp/ws/alice/s1 /var/tmp/ws/alice/s1');
  });

  it('binds what the command needs read-only after the walls, hiding again the home and sandbox.hidden inside it', () => {
    const needs = { ...places, exposed: ['/home/ann/.nvm/versions/node/v20', '/srv'] };
    const mounts = mountsOf(bwrapArgs(config({ hidden: ['/srv/secrets'] }), needs, 'agent', []));
    const nvm = mounts.indexOf('--ro-bind /home/ann/.nvm/versions/node/v20 /home/ann/.nvm/versions/node/v20');
    expect(nvm).to.be.greaterThan(mounts.indexOf('--tmpfs /home'));
    const srv = mounts.indexOf('--ro-bind /srv /srv');
    expect(mounts.slice(srv + 1, srv + 3)).to.deep.equal([`--tmpfs ${HOME}`, '--tmpfs /srv/secrets']);
  });

  it('binds a member\'s folder from its checked fd, never from its path', () => {
    const pinned = { ...places, folderByFd: true };
    const mounts = mountsOf(bwrapArgs(config(), pinned, 'agent', []));
    expect(mounts).to.include(`--bind-fd ${FOLDER_FD} ${places.folder}`);
    expect(mounts.filter((m) => m.startsWith(`--bind ${places.folder}`))).to.deep.equal([]);
  });

  it('hides the home again when an admin gives a session a folder that holds it', () => {
    const wide = { ...places, folder: '/srv' };
    const mounts = mountsOf(bwrapArgs(config(), wide, 'agent', []));
    const folderBind = mounts.indexOf('--bind /srv /srv');
    expect(folderBind).to.be.greaterThan(0);
    expect(mounts[folderBind + 1]).to.equal(`--tmpfs ${HOME}`);
    expect(mounts.indexOf(`--tmpfs ${HOME}`, folderBind)).to.be.lessThan(mounts.indexOf(`--bind ${wide.agentHome} ${wide.agentHome}`));
  });

  it('passes the command and its arguments as arguments: nothing of them enters the shell text, which bounds open files', () => {
    const hostile = ['--model', '"; cat /etc/shadow; echo "', '$(id)'];
    const argv = bwrapArgs(config({ maxOpenFiles: 64 }), places, '/usr/bin/agent', hostile);
    const after = argv.slice(argv.indexOf('--') + 1);
    expect(after.slice(0, 2)).to.deep.equal(['/bin/sh', '-c']);
    const script = after[2]!;
    expect(script).to.match(/^ulimit -n 64 && /);
    expect(script).to.match(/exec "\$0" "\$@"$/);
    expect(after.slice(3)).to.deep.equal(['/usr/bin/agent', ...hostile]);
    for (const piece of hostile) expect(script).to.not.include(piece);
  });
});
