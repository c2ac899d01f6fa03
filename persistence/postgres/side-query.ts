// The side store's one way to run a statement (postgres-side.ts), which its people, schedules and
// outbox take: a type of its own, so that they need not import the side store that makes them.
import type pg from 'pg';

/** A statement on the side pool; its error names the table and the SQLSTATE, never the password. */
export type SideQuery = <R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]) => Promise<pg.QueryResult<R>>;
