import { expect } from 'chai';
import { SpanRecorder, type RootSampler } from '../../agents/span-recorder.js';
import type { SpanRecord } from '../../protocol/span-record.js';

function recorder(sample: RootSampler, maxPending = 100, batchSize = 2) {
  const batches: SpanRecord[][] = [];
  let dropped = 0;
  const spans = new SpanRecorder({ send: (records) => batches.push(records), sample, maxPending, batchSize, delayMs: 60_000, dropped: () => dropped++ });
  return { spans, batches, dropped: () => dropped };
}

describe('span recorder (the turns-thread side of tracing)', () => {
  it("a root asks the sampler; a child shares its parent's decision; a remote parent's trace id and sampling are the root's to weigh", () => {
    const asked: (string | null)[] = [];
    const { spans, batches } = recorder((_traceId, parent) => {
      asked.push(parent?.spanId ?? null);
      return parent === null || parent.sampled;
    });
    const root = spans.start('invoke_agent a', null);
    const child = root.child('chat m', { kind: 2 });
    child.end();
    root.end();
    expect(asked).to.deep.equal([null]);
    expect(batches).to.have.length(1);
    const [chat, turn] = batches[0]!;
    expect(chat).to.deep.include({ name: 'chat m', kind: 2, traceId: turn!.traceId, parent: { spanId: turn!.spanId, remote: false } });
    expect(turn!.parent).to.equal(undefined);
    expect(root.traceparent).to.match(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);

    const client = { traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), sampled: false, remote: true, traceState: 'k=v' };
    const unsampled = spans.start('invoke_agent a', client);
    expect(asked.at(-1)).to.equal('b'.repeat(16));
    expect(unsampled.recorded).to.equal(false);
    expect(unsampled.traceparent).to.equal(`00-${'a'.repeat(32)}-${unsampled.context.spanId}-00`);
    expect(unsampled.child('chat m').recorded).to.equal(false);
  });

  it('a span that fails carries error.type and its message; ended twice it is sent once', () => {
    const { spans, batches } = recorder(() => true, 100, 1);
    const span = spans.start('execute_tool t', null, { ids: { traceId: 'c'.repeat(32), spanId: 'd'.repeat(16) }, startMs: 1000 });
    span.fail('tool_error', 'it broke', 1500);
    span.end(2000);
    expect(batches).to.deep.equal([[{ name: 'execute_tool t', kind: 0, traceId: 'c'.repeat(32), spanId: 'd'.repeat(16), startMs: 1000, endMs: 1500, attributes: { 'error.type': 'tool_error' }, error: { message: 'it broke' } }]]);
  });

  it('past maxPending spans not yet taken by the worker, a span is dropped and counted; taken ones make room', () => {
    const { spans, batches, dropped } = recorder(() => true, 4, 2);
    for (let i = 0; i < 6; i++) spans.start(`s${i}`, null).end();
    expect(batches.map((b) => b.map((s) => s.name))).to.deep.equal([['s0', 's1'], ['s2', 's3']]);
    expect(dropped()).to.equal(2);
    spans.taken(2);
    spans.start('s6', null).end();
    spans.flush();
    expect(batches.at(-1)!.map((s) => s.name)).to.deep.equal(['s6']);
  });
});
