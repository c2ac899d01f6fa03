// `acp.home_sync.exclude` (AGENT.md §6): globs relative to a guest's home, `*` within a name, `**`
// across folders; a folder that matches is left out with everything in it.
import { expect } from 'chai';
import { pathGlobs } from '../../agents/acp/path-globs.js';

describe('the home sync\'s exclusions (agents/acp/path-globs.ts)', () => {
  const excluded = pathGlobs(['.cache/**', '**/node_modules/**', '*.tmp']);

  it('leaves out the default caches wherever node_modules lies, and a folder with all it holds', () => {
    for (const path of ['.cache', '.cache/x', '.cache/a/b', 'node_modules', 'node_modules/dep/index.js', 'proj/node_modules', 'a/b/node_modules/c', 'x.tmp']) expect(excluded(path), path).to.equal(true);
  });

  it('keeps what only looks alike', () => {
    for (const path of ['.cached', 'cache/x', '.claude/projects/a.jsonl', 'node_modulesx', 'my_node_modules/x', 'dir/x.tmp', 'x.tmpl']) expect(excluded(path), path).to.equal(false);
  });
});
