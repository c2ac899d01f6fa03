import { expect } from 'chai';
import { resolveHeartbeatSecs, resolveWorkers } from '../../bin/host-options.js';

describe('host options', () => {
  it('workers inherit the TUI pool env or 8 (the seed test)', () => {
    expect(resolveWorkers({})).to.equal(8);
    expect(resolveWorkers({ HERMES_TUI_RPC_POOL_WORKERS: '11' })).to.equal(11);
    // A malformed value falls back to 8, not the old except-branch 4.
    expect(resolveWorkers({ HERMES_TUI_RPC_POOL_WORKERS: 'not-an-int' })).to.equal(8);
  });

  it('prefers TURNHOST_WORKERS, and a malformed one gives 8 rather than falling through', () => {
    expect(resolveWorkers({ TURNHOST_WORKERS: '3', HERMES_TUI_RPC_POOL_WORKERS: '11' })).to.equal(3);
    expect(resolveWorkers({ TURNHOST_WORKERS: 'x', HERMES_TUI_RPC_POOL_WORKERS: '11' })).to.equal(8);
    expect(resolveWorkers({ TURNHOST_WORKERS: '0' })).to.equal(8);
    expect(resolveWorkers({ TURNHOST_WORKERS: '-2' })).to.equal(8);
    expect(resolveWorkers({ TURNHOST_WORKERS: '2.5' })).to.equal(8);
    expect(resolveWorkers({ TURNHOST_WORKERS: '' , HERMES_TUI_RPC_POOL_WORKERS: '6' })).to.equal(6);
  });

  it('lets --workers override the environment', () => {
    expect(resolveWorkers({ TURNHOST_WORKERS: '3' }, 5)).to.equal(5);
  });

  it('resolves the heartbeat the same way, default 5, <= 0 meaning off', () => {
    expect(resolveHeartbeatSecs({})).to.equal(5);
    expect(resolveHeartbeatSecs({ HERMES_COMPUTE_HOST_HEARTBEAT_SECS: '15' })).to.equal(15);
    expect(resolveHeartbeatSecs({ TURNHOST_HEARTBEAT_SECS: '0.5', HERMES_COMPUTE_HOST_HEARTBEAT_SECS: '15' })).to.equal(0.5);
    expect(resolveHeartbeatSecs({ TURNHOST_HEARTBEAT_SECS: '0' })).to.equal(0);
    expect(resolveHeartbeatSecs({ TURNHOST_HEARTBEAT_SECS: 'soon' })).to.equal(5);
    expect(resolveHeartbeatSecs({}, 1)).to.equal(1);
  });
});
