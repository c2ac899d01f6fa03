// The catalogue of agents (AGENT.md §8) as read from a file: each definition over the top level's
// keys, key by key; validated whole, every problem one line naming the file and the key path; a
// file without `agents` is the one agent `--agent` names, as before.
import { expect } from 'chai';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readCatalogue } from '../../agents/catalogue-config.js';
import { catalogueHandoff, readHandedCatalogue, type HandedCatalogue } from '../../agents/catalogue-handoff.js';
import { AgentLoadError, EXIT_CONFIG } from '../../agents/loader-error.js';
import { definitionOver, readAgentConfig } from '../../agents/config-file.js';
import { GuestSlots } from '../../agents/acp/guest-slots.js';

describe('the catalogue of agents (agents/catalogue-config.ts)', () => {
  let dir: string;
  let file: string;
  const source = () => ({ home: dir, flag: file, env: {} });
  const write = (config: unknown) => writeFileSync(file, JSON.stringify(config));
  const problem = async (config: unknown, spec?: string): Promise<string> => {
    write(config);
    try {
      await readCatalogue(spec, source());
    } catch (err) {
      return (err as Error).message;
    }
    throw new Error('it was accepted');
  };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'turnhost-catalogue-'));
    file = join(dir, 'agent.json');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('a definition is over the top level key by key: an object key merged, any other replaced', () => {
    const top = { sandbox: { allow_hosts: ['a.example'], memory_mb: 512 }, approval: { default: 'ask' }, model: 'm0' };
    expect(definitionOver(top, { sandbox: { allow_hosts: ['b.example'] }, model: 'm1' })).to.deep.equal({
      sandbox: { allow_hosts: ['b.example'], memory_mb: 512 },
      approval: { default: 'ask' },
      model: 'm1',
    });
    write({ approval: { default: 'allow' }, agents: { quick: { kind: 'openai', model: 'm1', label: 'Quick', approval: { deny: ['x'] } } } });
    const read = readAgentConfig({ ...source(), definition: 'quick' });
    expect(read.raw, 'the catalogue\'s own keys are no agent\'s').to.deep.equal({ approval: { default: 'allow', deny: ['x'] }, model: 'm1' });
    expect(read.at).to.equal('agents.quick.');
  });

  it('names each problem by its key path, whole file validated at once', async () => {
    const at = (what: string) => `${file}: ${what}`;
    expect(await problem({ agents: { codex: { kind: 'acp', acp: { command: 7 } } } })).to.equal(at('agents.codex.acp.command: expected a string'));
    expect(await problem({ agents: { quick: { kind: 'openai' } } })).to.equal(at('agents.quick.model: no model given: set "model" in the agent config or $TURNHOST_MODEL'));
    expect(await problem({ agents: { Bad_Name: { kind: 'script' } } })).to.match(/agents\.Bad_Name: a name is lower-case letters/);
    expect(await problem({ agents: { quick: {} } })).to.match(/agents\.quick\.kind: missing/);
    expect(await problem({ agents: { quick: { kind: 'gpt-9' } } })).to.equal(at('agents.quick.kind: unknown agent "gpt-9" (built in: script, openai, acp; or give a path to a module)'));
    expect(await problem({ agents: { quick: { kind: 'script', models: ['m'] } } })).to.equal(at('agents.quick.models: only an openai agent has models to pick from'));
    expect(await problem({ agents: { quick: { kind: 'script' } }, default_agent: 'nope' })).to.equal(at('default_agent: nope is not in the catalogue (agents: quick)'));
    expect(await problem({ agents: { quick: { kind: 'script' } } }, 'other')).to.equal(`${file}: --agent other is not in the catalogue (agents: quick)`);
    expect(await problem({ agents: { g: { kind: 'acp', acp: { command: 'x' }, sandbox: { workspaces_root: '/srv' } } } })).to.match(/agents\.g\.sandbox\.workspaces_root: give it at the top level/);
    expect(await problem({ agents: { quick: { kind: 'script', home_template: './none' } } })).to.match(/agents\.quick\.home_template: .*none is not a folder/);
    expect(await problem({ default_agent: 'quick' })).to.match(/default_agent: names an agent of "agents"/);
  });

  it('the default is --agent, else default_agent, else the first; relative paths are the file\'s; a file without agents is the one agent --agent names', async () => {
    mkdirSync(join(dir, 'homes'));
    write({ agents: { a: { kind: 'script' }, b: { kind: 'script', home_template: './homes' }, c: { kind: './mine.mjs' } }, default_agent: 'b' });
    writeFileSync(join(dir, 'mine.mjs'), 'export default { name: "mine", runTurn: () => ({ reply: "" }) };');
    const catalogue = await readCatalogue(undefined, source());
    expect([catalogue.defaultAgent, [...catalogue.definitions.keys()]]).to.deep.equal(['b', ['b', 'a', 'c']]);
    expect(catalogue.definitions.get('b')!.homeTemplate).to.equal(join(dir, 'homes'));
    expect(catalogue.definitions.get('c')!.kind).to.equal(join(dir, 'mine.mjs'));
    expect((await readCatalogue('c', source())).defaultAgent).to.equal('c');
    write({});
    const single = await readCatalogue(join(dir, 'mine.mjs'), source());
    expect([single.isCatalogue, single.defaultAgent, [...single.definitions.keys()]]).to.deep.equal([false, 'mine', ['mine']]);
    expect((await readCatalogue(undefined, source())).defaultAgent).to.equal('script');
  });

  it('max_live_guests: 16 across a catalogue\'s agents unless given; a file of one agent is bound by its own max_live_sessions alone, as before catalogues', async () => {
    write({ agents: { a: { kind: 'script' } } });
    expect((await readCatalogue(undefined, source())).maxLiveGuests).to.equal(16);
    write({ max_live_guests: 40, agents: { a: { kind: 'script' } } });
    expect((await readCatalogue(undefined, source())).maxLiveGuests).to.equal(40);
    write({ acp: { command: 'true', max_live_sessions: 66 }, sandbox: { mode: 'off' } });
    expect((await readCatalogue('acp', source())).maxLiveGuests).to.equal(null);
    write({ max_live_guests: 4, acp: { command: 'true' }, sandbox: { mode: 'off' } });
    expect((await readCatalogue('acp', source())).maxLiveGuests).to.equal(4);

    const released: string[] = [];
    const pool = (n: number) => ({ liveCount: n, oldestIdle: () => ({ sid: `s${released.length}`, usedAt: released.length }), release: async (sid: string) => void released.push(sid) });
    const unbound = new GuestSlots(null);
    unbound.join(pool(66));
    unbound.releaseOverBound();
    expect(released).to.deep.equal([]);
    const bound = new GuestSlots(16);
    bound.join(pool(18));
    bound.releaseOverBound();
    expect(released).to.have.length(2);
  });

  it('a definition\'s digest changes with it and only with it', async () => {
    write({ agents: { a: { kind: 'script' }, b: { kind: 'openai', model: 'm1' } } });
    const before = await readCatalogue(undefined, source());
    write({ agents: { a: { kind: 'script' }, b: { kind: 'openai', model: 'm2' } } });
    const after = await readCatalogue(undefined, source());
    expect(after.definitions.get('a')!.digest).to.equal(before.definitions.get('a')!.digest);
    expect(after.definitions.get('b')!.digest).to.not.equal(before.definitions.get('b')!.digest);
    expect(after.digest).to.not.equal(before.digest);
  });

  it('the catalogue a daemon hands its host reads as validated, the file\'s text and the values its agents need included; nothing handed is a config error', async () => {
    write({ approval: { default: 'allow' }, agents: { quick: { kind: 'script', label: 'Quick' }, model: { kind: 'openai', model: 'm1', models: ['m1', 'm2'] } } });
    const checked = { catalogue: await readCatalogue(undefined, source()), mechanism: 'bubblewrap 0.9.0' };
    const handoff = join(dir, 'handoff');
    writeFileSync(handoff, catalogueHandoff({ checked, env: { OPENAI_API_KEY: 'sk-handed' } }));
    write({ agents: { other: { kind: 'script' } } });
    const hostSource = { home: dir, flag: file, env: { HOST: 'its own' } };
    const readBack = (): Promise<HandedCatalogue> => {
      const fd = openSync(handoff, 'r');
      return readHandedCatalogue(fd, hostSource).finally(() => closeSync(fd));
    };
    const handed = await readBack();
    expect(handed.env).to.deep.equal({ OPENAI_API_KEY: 'sk-handed' });
    expect(handed.checked.mechanism).to.equal('bubblewrap 0.9.0');
    expect(handed.checked.catalogue).to.deep.equal({
      ...checked.catalogue,
      definitions: new Map([...checked.catalogue.definitions].map(([name, d]) => [name, { ...d, source: { ...hostSource, text: checked.catalogue.text, definition: name } }])),
    });
    expect(readAgentConfig(handed.checked.catalogue.definitions.get('model')!.source).raw, 'an agent made later reads the file as validated').to.deep.equal({ approval: { default: 'allow' }, model: 'm1' });

    writeFileSync(handoff, '');
    const refused = await readBack().then(() => null, (err: unknown) => err);
    expect(refused).to.be.instanceOf(AgentLoadError);
    expect((refused as AgentLoadError).exitCode).to.equal(EXIT_CONFIG);
  });
});
