// The host as the page shows it (PROTOCOL.md §5.5): its state, pid, restarts and last heartbeat,
// polled by App.

export interface HostView {
  state: string;
  pid: number | null;
  restarts: number;
  last_hb_ms: number | null;
}

export function HostRegion({ host }: { host: HostView | null }) {
  return (
    <section role="region" aria-label="Host">
      <h2>Host</h2>
      {host === null ? (
        <p>…</p>
      ) : (
        <dl>
          <dt>state</dt>
          <dd>{host.state}</dd>
          <dt>pid</dt>
          <dd>{host.pid ?? '–'}</dd>
          <dt>restarts</dt>
          <dd>{host.restarts}</dd>
          <dt>heartbeat</dt>
          <dd>{host.last_hb_ms === null ? '–' : `${(host.last_hb_ms / 1000).toFixed(1)} s ago`}</dd>
        </dl>
      )}
    </section>
  );
}
