import { expect } from 'chai';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AgentLoadError } from '../../agents/loader-error.js';
import { approvalPolicy } from '../../agents/model/approval.js';
import { loadModelConfig } from '../../agents/model/config.js';
import { ApiHistories } from '../../agents/model/api-history.js';
import { characterCount, compressionCut, MISSING_RESULT, Repair, type ApiMessage } from '../../agents/model/history.js';
import { ToolCallStream } from '../../agents/model/tool-call-stream.js';
import { serverNameClash } from '../../agents/model/mcp-names.js';
import { approvalQuestion } from '../../protocol/tool-arguments.js';
import { cutResult, RESULT_MAX_BYTES } from '../../agents/model/tools.js';
import type { ChatMessage } from '../../protocol/chat.js';
import { pairingProblem } from '../helpers/fake-openai.js';

const call = (id: string, name = 'f') => ({ id, type: 'function' as const, function: { name, arguments: '{}' } });

/** The whole history converted at once, as the API takes it. */
function toApiMessages(messages: readonly ChatMessage[], system?: ApiMessage): ApiMessage[] {
  const repair = new Repair(system === undefined ? [] : [system]);
  for (const message of messages) repair.add(message);
  return repair.finish();
}

describe('model agent parts', () => {
  it('accumulates tool-call fragments by index, and by id where a server reuses an index', () => {
    const stream = new ToolCallStream();
    stream.add({ index: 0, id: 'a', function: { name: 'one', arguments: '{"x"' } });
    stream.add({ index: 1, id: 'b', function: { name: 'two', arguments: '' } });
    stream.add({ index: 0, function: { arguments: ': 1}' } });
    stream.add({ index: 1, function: { arguments: '{}' } });
    stream.add({ index: 0, id: 'c', function: { name: 'three', arguments: '{}' } });
    expect(stream.finish('gen').map((c) => [c.id, c.function.name, c.function.arguments])).to.deep.equal([
      ['a', 'one', '{"x": 1}'],
      ['b', 'two', '{}'],
      ['c', 'three', '{}'],
    ]);
    const anonymous = new ToolCallStream();
    anonymous.add({ index: 0, function: { name: 'n', arguments: '{}' } });
    expect(anonymous.finish('gen')[0]!.id).to.equal('gen-0');
  });

  it('repairs a history before a request: a missing result is filled in, a stray result left out', () => {
    const history: ChatMessage[] = [
      { role: 'user', content: 'u1' },
      { role: 'assistant', content: '', tool_calls: [call('c1'), call('c2')] },
      { role: 'tool', tool_call_id: 'c2', content: 'r2' },
      { role: 'user', content: 'u2' },
      { role: 'tool', tool_call_id: 'stray', content: 'lost' },
      { role: 'assistant', content: 'a', tool_calls: [call('c3')] },
    ];
    const api = toApiMessages(history);
    expect(api).to.deep.equal([
      { role: 'user', content: 'u1' },
      { role: 'assistant', content: null, tool_calls: [call('c1'), call('c2')] },
      { role: 'tool', tool_call_id: 'c2', content: 'r2' },
      { role: 'tool', tool_call_id: 'c1', content: MISSING_RESULT },
      { role: 'user', content: 'u2' },
      { role: 'assistant', content: 'a', tool_calls: [call('c3')] },
      { role: 'tool', tool_call_id: 'c3', content: MISSING_RESULT },
    ]);
    expect(pairingProblem(api)).to.equal(null);
    expect(pairingProblem(history.map((m) => ({ ...m, content: m.content })))).to.not.equal(null);
  });

  it('passes a message already in the API shape as it is, and copies one that is not', () => {
    const history: ChatMessage[] = Object.freeze([
      Object.freeze({ role: 'user', content: 'u' }),
      Object.freeze({ role: 'assistant', content: 'a' }),
      Object.freeze({ role: 'developer', content: 'd' }),
      Object.freeze({ role: 'user', content: 'x', tool_call_id: 'odd' }),
    ]) as ChatMessage[];
    const api = toApiMessages(history);
    expect(api[0]).to.equal(history[0]);
    expect(api[1]).to.equal(history[1]);
    expect(api.slice(2)).to.deep.equal([{ role: 'user', content: 'd' }, { role: 'user', content: 'x' }]);
  });

  it('builds a call\'s messages from what it kept between calls exactly as from the whole history, as the history grows, is cut and is replaced', () => {
    const histories = new ApiHistories();
    const system = { role: 'system' as const, content: 'sys' };
    const frozen = (m: ChatMessage): ChatMessage => Object.freeze({ ...m });
    const expectSame = (history: readonly ChatMessage[], added: ChatMessage[]): void => {
      const made = histories.messages(system, history, added);
      const whole = toApiMessages([...history, ...added], system);
      expect(Buffer.concat(made.json).toString()).to.equal(JSON.stringify(whole));
      expect(made.chars).to.equal(characterCount(whole));
    };
    const history: ChatMessage[] = [frozen({ role: 'user', content: 'u1' }), frozen({ role: 'assistant', content: 'a1' })];
    const prompt: ChatMessage[] = [{ role: 'user', content: 'next' }];
    expectSame(history, prompt);
    // Appended: a call block left open (one result missing), then closed by a later message.
    history.push(frozen({ role: 'user', content: 'u2' }), frozen({ role: 'assistant', content: '', tool_calls: [call('c1'), call('c2')] }), frozen({ role: 'tool', tool_call_id: 'c2', content: 'r2' }));
    expectSame(history, prompt);
    expectSame(history, [{ role: 'tool', tool_call_id: 'c1', content: 'r1' }]);
    history.push(frozen({ role: 'user', content: 'u3' }), frozen({ role: 'assistant', content: 'a3: naïve ☕ 🙂 "quoted"\n\u0001' }));
    expectSame(history, prompt);
    // Cut after the converted part, then grown again with new messages: nothing kept may be reused.
    const cut = history.slice(0, 3);
    cut.push(frozen({ role: 'assistant', content: 'other' }), frozen({ role: 'user', content: 'u4' }), frozen({ role: 'assistant', content: 'a4' }), frozen({ role: 'user', content: 'u5' }));
    expectSame(cut, prompt);
    expectSame(history, prompt);
    // Replaced (a compression, a read from the store): new objects, the same texts.
    expectSame(history.map(frozen), prompt);
    expectSame([], prompt);
  });

  it('converts and serializes a history\'s earlier messages once: the next call reuses what the last one made', () => {
    const histories = new ApiHistories();
    const system = { role: 'system' as const, content: 'sys' };
    let serialized = 0;
    // A plain message goes to the API as it is, so JSON.stringify calls its toJSON each time it serializes it.
    const counted = (content: string): ChatMessage => Object.freeze({ role: 'user', content, toJSON: () => (serialized++, { role: 'user', content }) }) as ChatMessage;
    const history: ChatMessage[] = [
      counted('u1'),
      Object.freeze({ role: 'assistant', content: '', tool_calls: [call('c1')] }),
      Object.freeze({ role: 'tool', tool_call_id: 'c1', content: 'r1' }),
      Object.freeze({ role: 'assistant', content: 'a1' }),
    ];
    const first = histories.messages(system, history, [{ role: 'user', content: 'p1' }]);
    expect(serialized).to.equal(1);
    // The assistant message that called a tool goes converted (content '' → null).
    expect(JSON.parse(Buffer.concat(first.json).toString())[2]).to.deep.equal({ role: 'assistant', content: null, tool_calls: [call('c1')] });
    history.push(Object.freeze({ role: 'user', content: 'p1' }), Object.freeze({ role: 'assistant', content: 'a2' }));
    const next = histories.messages(system, history, [{ role: 'user', content: 'p2' }]);
    expect(serialized).to.equal(1);
    expect(Buffer.concat(next.json).toString()).to.equal(JSON.stringify(toApiMessages([...history, { role: 'user', content: 'p2' }], system)));
    // Replaced by new objects (a read from the store): serialized again.
    const before = serialized;
    histories.messages(system, history.map((m) => Object.freeze({ ...m })), []);
    expect(serialized).to.equal(before + 1);
  });

  it('never cuts a compression between a tool call and its results', () => {
    const history: ChatMessage[] = [
      { role: 'user', content: 'u' },
      { role: 'assistant', content: '', tool_calls: [call('c1'), call('c2')] },
      { role: 'tool', tool_call_id: 'c1', content: '1' },
      { role: 'tool', tool_call_id: 'c2', content: '2' },
      { role: 'assistant', content: 'done' },
    ];
    expect(compressionCut(history, 2)).to.equal(1);
    expect(compressionCut(history, 1)).to.equal(4);
    expect(compressionCut(history, 10)).to.equal(0);
  });

  it('applies the approval lists most specific first: deny, ask, allow, then the default; clarify never asks', () => {
    const policy = approvalPolicy({ default: 'ask', allow: ['mcp_fs_*'], ask: ['mcp_fs_write*'], deny: ['mcp_fs_write_secret', 'clarify'] }, ['fs', 'web']);
    expect(policy({ name: 'mcp_fs_read', server: 'fs' })).to.equal('allow');
    expect(policy({ name: 'mcp_fs_write_file', server: 'fs' })).to.equal('ask');
    expect(policy({ name: 'mcp_fs_write_secret', server: 'fs' })).to.equal('deny');
    expect(policy({ name: 'mcp_web_get', server: 'web' })).to.equal('ask');
    expect(policy({ name: 'clarify' })).to.equal('allow');
    expect(approvalPolicy({ default: 'allow', allow: [], ask: [], deny: [] }, [])({ name: 'anything' })).to.equal('allow');
  });

  it('a rule that names a server by its prefix matches that server\'s tools only; servers whose tool names could meet are refused together', () => {
    const policy = approvalPolicy({ default: 'ask', allow: ['mcp_fs-safe_*', 'mcp_*_list'], ask: [], deny: [] }, ['fs', 'fs-safe']);
    expect(policy({ name: 'mcp_fs-safe_read', server: 'fs-safe' })).to.equal('allow');
    expect(policy({ name: 'mcp_fs_list', server: 'fs' }), 'a glob naming no server matches every server').to.equal('allow');
    expect(serverNameClash(['fs', 'fs-safe', 'web'])).to.equal(null);
    expect(serverNameClash(['fs_safe', 'fs'])).to.equal('the servers "fs" and "fs_safe" would give tools the same names (both under mcp_fs_safe_…): rename one of them');
    expect(serverNameClash(['a.b', 'a_b'])).to.include('"a.b" and "a_b"');
  });

  it('shows approval arguments as they will run: the winning value of a repeated key, controls escaped, a cut that says how much', () => {
    const args = JSON.parse(`{"command":"ls -la /tmp","why":"${'x'.repeat(490)}","command":"rm -rf /srv/important"}`) as Record<string, unknown>;
    const question = approvalQuestion('mcp_sh_run', args);
    expect(question.startsWith('mcp_sh_run({"command":"rm -rf /srv/important","why":"xxx')).to.equal(true);
    expect(question).to.match(/… \[\d+ more characters not shown\]\)$/);
    expect(approvalQuestion('t', { command: 'rm -rf /\rls' })).to.equal('t({"command":"rm -rf /\\rls"})');
    expect(approvalQuestion('t', { text: 'a\u009b2Jb\u202ec' })).to.equal('t({"text":"a\\u009b2Jb\\u202ec"})');
  });

  it('cuts a result over 64 KiB on a character boundary, saying how much was left out', () => {
    expect(cutResult('short')).to.equal('short');
    const long = 'é'.repeat(RESULT_MAX_BYTES);
    const cut = cutResult(long);
    const [kept, note] = cut.split('\n');
    expect(Buffer.byteLength(kept!)).to.be.at.most(RESULT_MAX_BYTES);
    expect(kept!.endsWith('é')).to.equal(true);
    expect(note).to.equal(`[result cut: ${RESULT_MAX_BYTES} of ${RESULT_MAX_BYTES * 2} bytes left out]`);
  });

  it('reads the config with every default, the model from $TURNHOST_MODEL and the base URL from $OPENAI_BASE_URL', () => {
    const home = mkdtempSync(join(tmpdir(), 'turnhost-config-'));
    try {
      const config = loadModelConfig({ home, env: { TURNHOST_MODEL: 'env-model', OPENAI_BASE_URL: 'http://127.0.0.1:1/v1/' } });
      expect(config).to.deep.include({
        model: 'env-model',
        base_url: 'http://127.0.0.1:1/v1',
        api_key_env: 'OPENAI_API_KEY',
        context_tokens: 128000,
        compress_at: 0.75,
        keep_recent: 6,
        max_tool_rounds: 25,
        request_timeout_s: 600,
        idle_timeout_s: 60,
        max_retries: 2,
        approval: { default: 'ask', allow: [], ask: [], deny: [] },
        mcp_servers: {},
        personalities: {},
        file: null,
      });
      writeFileSync(join(home, 'agent.json'), JSON.stringify({ model: 'm', mcp_servers: { fs: { command: 'x' } } }));
      const withServer = loadModelConfig({ home, env: {} });
      expect(withServer.base_url).to.equal('https://api.openai.com/v1');
      expect(withServer.mcp_servers['fs'], 'a server without cwd runs in its sandbox\'s home (agents/sandbox)').to.deep.equal({ command: 'x', args: [], env: {}, enabled: true, timeout_s: 60, tools: { exclude: [] } });
      const elsewhere = join(home, 'conf');
      mkdirSync(elsewhere);
      writeFileSync(join(elsewhere, 'agent.json'), JSON.stringify({ model: 'm', mcp_servers: { fs: { command: './bin/server', cwd: 'work' }, npx: { command: 'npx' } } }));
      const relative = loadModelConfig({ home, flag: join(elsewhere, 'agent.json'), env: {} });
      expect(relative.mcp_servers['fs'], 'relative paths are read from the config file\'s folder').to.include({ command: join(elsewhere, 'bin', 'server'), cwd: join(elsewhere, 'work') });
      expect(relative.mcp_servers['npx']).to.include({ command: 'npx' }).and.not.have.property('cwd');
      writeFileSync(join(home, 'agent.json'), JSON.stringify({ model: 'm', approval: { default: 'never' } }));
      expect(() => loadModelConfig({ home, env: {} })).to.throw(AgentLoadError, /approval\.default: /);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});
