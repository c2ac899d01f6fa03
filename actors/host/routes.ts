// The mutator route table (DESIGN.md "Routes") and the typed control requests its routes carry.
import type { ControlFrame } from '../../protocol/frames.js';

export type RouteClass = 'turn-path' | 'run-concurrent' | 'idle-gated';

export const MUTATOR_ROUTE_TABLE = Object.freeze({
  'prompt.submit': 'turn-path',
  'session.interrupt': 'turn-path',
  'reload.mcp': 'run-concurrent',
  'session.save': 'run-concurrent',
  'session.compress': 'idle-gated',
  'prompt.submit.truncate': 'idle-gated',
  'slash.model': 'idle-gated',
  'slash.personality': 'idle-gated',
  'slash.prompt': 'idle-gated',
  'slash.compress': 'idle-gated',
  'session.reset': 'idle-gated',
  'session.history.reload': 'idle-gated',
  'slash.retry': 'idle-gated',
} as const satisfies Record<string, RouteClass>);

/**
 * turnhost's own control routes, beyond the table's thirteen (which is the seed's, and stays as it
 * is): carried in control frames like those, but not offered to clients by these names (the
 * daemon's methods of PROTOCOL.md §2.2 call them).
 */
const OWN_ROUTES = Object.freeze({
  'session.rewind': 'idle-gated',
} as const satisfies Record<string, RouteClass>);

export type RouteName = keyof typeof MUTATOR_ROUTE_TABLE;
export type ControlRoute = { [R in RouteName]: (typeof MUTATOR_ROUTE_TABLE)[R] extends 'turn-path' ? never : R }[RouteName] | keyof typeof OWN_ROUTES;

export function routeClass(name: string): RouteClass | undefined {
  return Object.hasOwn(MUTATOR_ROUTE_TABLE, name) ? MUTATOR_ROUTE_TABLE[name as RouteName] : undefined;
}

/** A control frame's route: one of the table's, or one of turnhost's own. */
export function controlClass(name: string): RouteClass | undefined {
  return routeClass(name) ?? (Object.hasOwn(OWN_ROUTES, name) ? OWN_ROUTES[name as keyof typeof OWN_ROUTES] : undefined);
}

/** A control route with its parameters validated. */
export type ControlRequest =
  | { route: 'session.save' }
  | { route: 'reload.mcp' }
  | { route: 'session.compress' | 'slash.compress'; focusTopic: string | null }
  | { route: 'session.reset' }
  | { route: 'session.history.reload' }
  | { route: 'prompt.submit.truncate'; keep: number }
  | { route: 'slash.model'; model: string }
  | { route: 'slash.personality'; personality: string }
  | { route: 'slash.prompt'; prompt: string }
  | { route: 'slash.retry' }
  | { route: 'session.rewind'; point: RewindPoint; by: string | null };

/**
 * Where a rewind cuts (PROTOCOL.md §2.2): after a turn (`to`, null: the beginning), or before one
 * (`before`, null: the last), whose prompt the route answers with (a retry or an edit submits next).
 */
export type RewindPoint = { to: string | null } | { before: string | null };

export type ControlParse = { ok: true; request: ControlRequest; idleGated: boolean } | { ok: false; message: string };

/** The slash command's argument (`/model X` → "X"), used when a control frame has no params. */
function commandArgument(command: string | undefined): string {
  if (command === undefined) return '';
  const trimmed = command.trim();
  const space = trimmed.search(/\s/);
  return space === -1 ? '' : trimmed.slice(space + 1).trim();
}

function textParam(frame: ControlFrame, key: string): string | undefined {
  if (frame.params === undefined) return commandArgument(frame.command) || undefined;
  const value = frame.params[key];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

export function parseControl(frame: ControlFrame): ControlParse {
  const name = frame.route_name;
  const cls = controlClass(name);
  if (cls === undefined) return { ok: false, message: `unclassified route: ${name}` };
  if (cls === 'turn-path') {
    return { ok: false, message: `route ${name} is turn-path: send ${name === 'prompt.submit' ? 'turn.start' : 'interrupt'}` };
  }
  const request = controlRequest(name as ControlRoute, frame);
  if (typeof request === 'string') return { ok: false, message: request };
  return { ok: true, request, idleGated: cls === 'idle-gated' };
}

function controlRequest(route: ControlRoute, frame: ControlFrame): ControlRequest | string {
  switch (route) {
    case 'session.save':
    case 'reload.mcp':
    case 'session.reset':
    case 'session.history.reload':
    case 'slash.retry':
      return { route };
    case 'session.compress':
    case 'slash.compress':
      return { route, focusTopic: textParam(frame, 'focus_topic') ?? null };
    case 'prompt.submit.truncate': {
      const raw = frame.params === undefined ? Number(commandArgument(frame.command) || NaN) : frame.params['keep'];
      if (typeof raw !== 'number' || !Number.isSafeInteger(raw) || raw < 0) return 'keep must be an integer >= 0';
      return { route, keep: raw };
    }
    case 'slash.model': {
      const model = textParam(frame, 'model');
      return model === undefined ? 'model required' : { route, model };
    }
    case 'slash.personality': {
      const personality = textParam(frame, 'personality');
      return personality === undefined ? 'personality required' : { route, personality };
    }
    case 'slash.prompt': {
      const prompt = textParam(frame, 'prompt');
      return prompt === undefined ? 'prompt required' : { route, prompt };
    }
    case 'session.rewind':
      return rewindRequest(frame.params ?? {});
  }
}

function rewindRequest(params: Record<string, unknown>): ControlRequest | string {
  const turnId = (key: string): string | null | undefined => {
    const value = params[key];
    return value === null || (typeof value === 'string' && value !== '') ? value : undefined;
  };
  const by = typeof params['by'] === 'string' ? params['by'] : null;
  const to = turnId('to_turn_id');
  const before = turnId('before_turn_id');
  if ((to === undefined) === (before === undefined)) return 'session.rewind takes one of to_turn_id (a turn id, or null) and before_turn_id (a turn id, or null for the last)';
  return { route: 'session.rewind', point: to !== undefined ? { to } : { before: before! }, by };
}
