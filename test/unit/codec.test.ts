import { expect } from 'chai';
import { decode, decodeOr, encode } from '../../persistence/codec.js';

describe('codec (superjson)', () => {
  it('round-trips Dates, Maps, Sets, BigInts and undefined', () => {
    const value = {
      at: new Date(Date.UTC(2026, 10, 29, 12, 0, 0)),
      seen: new Map<string, Date>([['a', new Date(0)]]),
      tags: new Set(['x', 'y']),
      big: 2n ** 70n,
      missing: undefined,
      nested: [{ n: 1 }],
    };
    const back = decode<typeof value>(encode(value));
    expect(back.at).to.be.instanceOf(Date);
    expect(back.at.getTime()).to.equal(value.at.getTime());
    expect(back.seen).to.be.instanceOf(Map);
    expect(back.seen.get('a')!.getTime()).to.equal(0);
    expect([...back.tags]).to.deep.equal(['x', 'y']);
    expect(back.big).to.equal(2n ** 70n);
    expect(back).to.have.property('missing', undefined);
    expect(back.nested).to.deep.equal([{ n: 1 }]);
  });

  it('stores plain JSON as readable JSON text', () => {
    expect(JSON.parse(encode({ model: 'm1' }))).to.deep.equal({ json: { model: 'm1' } });
  });

  it('gives the fallback for empty, missing or unreadable text', () => {
    expect(decodeOr('', { a: 1 })).to.deep.equal({ a: 1 });
    expect(decodeOr(null, 'x')).to.equal('x');
    expect(decodeOr('{not json', 'fallback')).to.equal('fallback');
    expect(decodeOr(encode({ model: 'm' }), {})).to.deep.equal({ model: 'm' });
  });
});
