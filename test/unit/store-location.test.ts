import { expect } from 'chai';
import { hidePassword, storeLocation } from '../../persistence/store-location.js';

describe('--store and $TURNHOST_STORE', () => {
  it('is SQLite in the home by default, and when named', () => {
    expect(storeLocation(undefined, '/h/turnhost.db', {})).to.deep.equal({ kind: 'sqlite', file: '/h/turnhost.db' });
    expect(storeLocation('sqlite', '/h/turnhost.db', { TURNHOST_STORE: 'postgres://x/y' })).to.deep.equal({ kind: 'sqlite', file: '/h/turnhost.db' });
  });

  it('takes a postgres:// URL from the option, else the environment, and shows it without its password', () => {
    const fromEnv = storeLocation(undefined, '', { TURNHOST_STORE: 'postgres://u:s3cret@db:5432/agents?sslmode=require' });
    expect(fromEnv).to.deep.equal({ kind: 'postgres', url: 'postgres://u:s3cret@db:5432/agents?sslmode=require', shown: 'postgres://u:***@db:5432/agents?sslmode=require' });
    expect(storeLocation('postgresql://u@db/agents', '', {})).to.include({ kind: 'postgres', shown: 'postgresql://u@db/agents' });
  });

  it('refuses anything else in one line that never repeats a password', () => {
    expect(() => storeLocation('mysql://root:s3cret@db/x', '', {})).to.throw(/expected "sqlite" or a postgres:\/\/ URL/).and.satisfy((e: Error) => !e.message.includes('s3cret'));
    expect(() => storeLocation('postgres://u:s3cret@[bad/x', '', {})).to.throw(/not a URL/).and.satisfy((e: Error) => !e.message.includes('s3cret'));
  });

  it('hides a password wherever it is: in the authority (even with an @ in it) and as a parameter', () => {
    expect(hidePassword('postgres://u:p@ss@h/db')).to.equal('postgres://u:***@h/db');
    expect(hidePassword('connect to postgres://h/db?user=u&password=zz&x=1 failed')).to.equal('connect to postgres://h/db?user=u&password=***&x=1 failed');
  });
});
