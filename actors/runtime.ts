// The one place that touches nact (7.6.2, pinned). nact gives FIFO mailboxes and one message
// at a time per actor; this wrapper adds what it lacks (reference/toolchain.md §1):
// - typed spawn/tell/ask, with a `replyTo` in every request instead of the untyped ctx.sender;
// - an onCrash on every actor that logs and never throws (a throwing onCrash kills the process);
// - escalated child crashes answered by stopping or resetting the child, never `resume`,
//   which leaves the child busy forever;
// - query timeouts clamped (nact wraps values above 2^31-1 to an immediate timeout);
// - our own time constants (nact's are invisible to ESM named imports).
import { createRequire } from 'node:module';
import * as nact from 'nact';
import type { Logger } from 'pino';

declare const accepts: unique symbol;

/**
 * A reference to an actor that takes messages of type M. nact's own Ref is structurally empty,
 * so any ref would fit any other; the phantom member makes the message type count, the way a
 * function parameter does (a ref taking a wider union may stand in for a narrower one).
 */
export type Ref<M> = nact.Ref<M> & { readonly [accepts]?: (msg: M) => void };
export type SystemRef = nact.Ref<never>;
/** Any actor, whatever it takes (for stop and parenthood). */
export type AnyRef = Ref<never>;

export const SECOND_MS = 1000;
export const MINUTE_MS = 60 * SECOND_MS;
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface ActorContext<M> {
  readonly self: Ref<M>;
  readonly name: string;
  readonly children: ReadonlyMap<string, AnyRef>;
}

export type Handler<S, M> = (state: S, msg: M, ctx: ActorContext<M>) => S | Promise<S>;

/**
 * When the actor's own handler throws: `resume` drops the message and keeps the state from
 * before it; `reset` re-runs `init`; `stop` stops it (afterStop runs); `escalate` lets the
 * parent decide (a top-level actor is stopped instead, nact would only console.log).
 */
export type CrashPolicy = 'resume' | 'reset' | 'stop' | 'escalate';

/** A parent's answer to a child's escalated crash. */
export type ChildCrashPolicy = 'stop-child' | 'reset-child';

export interface ActorOptions<S, M> {
  init: (ctx: ActorContext<M>) => S;
  log: Logger;
  onCrash?: CrashPolicy;
  onChildCrash?: ChildCrashPolicy;
  /** Runs after the actor stopped, with its last state; not awaited by nact, so keep it synchronous. */
  afterStop?: (state: S) => void;
}

export function startSystem(): SystemRef {
  return nact.start();
}

export function stopSystem(system: SystemRef): void {
  nact.stop(system);
}

export function spawnActor<S, M>(
  parent: AnyRef | SystemRef,
  name: string,
  handler: Handler<S, M>,
  options: ActorOptions<S, M>,
): Ref<M> {
  const { log } = options;
  const ownPolicy = options.onCrash ?? 'resume';
  const childPolicy = options.onChildCrash ?? 'stop-child';
  const topLevel = (parent as { type?: string }).type === 'system';
  const props = {
    initialStateFunc: (ctx: nact.ActorContext<M, nact.Ref<unknown>>) => options.init(ctx as ActorContext<M>),
    onCrash: (msg: unknown, err: Error | undefined, ctx: nact.SupervisionContext<M, nact.Ref<unknown>>, child?: nact.Ref<unknown>) => {
      try {
        if (child !== undefined) {
          log.error({ err, child: (child as { name?: string }).name, msg: kindOf(msg) }, 'child actor crashed');
          return childPolicy === 'reset-child' ? ctx.resetChild : ctx.stopChild;
        }
        log.error({ err, msg: kindOf(msg), policy: ownPolicy }, 'actor crashed');
        return decision(ownPolicy === 'escalate' && topLevel ? 'stop' : ownPolicy, ctx);
      } catch {
        return ctx.stop;
      }
    },
    afterStop: (state: S) => {
      try {
        options.afterStop?.(state);
      } catch (err) {
        log.error({ err }, 'afterStop failed');
      }
    },
  };
  const f = (state: S, msg: M, ctx: nact.ActorContext<M, nact.Ref<unknown>>) => handler(state, msg, ctx as ActorContext<M>);
  return nact.spawn(parent as nact.Ref<unknown>, f, name, props as never) as unknown as Ref<M>;
}

function decision(policy: CrashPolicy, ctx: nact.SupervisionContext<unknown, nact.Ref<unknown>>): symbol {
  switch (policy) {
    case 'resume':
      return ctx.resume as symbol;
    case 'reset':
      return ctx.reset as symbol;
    case 'stop':
      return ctx.stop as symbol;
    case 'escalate':
      return ctx.escalate as symbol;
  }
}

function kindOf(msg: unknown): unknown {
  return typeof msg === 'object' && msg !== null && 'kind' in msg ? (msg as { kind: unknown }).kind : typeof msg;
}

/** Fire and forget. A message to a stopped actor is dropped (nact's rule). */
export function tell<M>(ref: Ref<M>, msg: M): void {
  nact.dispatch(ref, msg);
}

/** Request/reply: `build` receives the replyTo ref to put in the message. Rejects after timeoutMs. */
export function ask<R, M>(ref: Ref<M>, build: (replyTo: Ref<R>) => M, timeoutMs: number): Promise<R> {
  const bounded = Math.max(1, Math.min(MAX_TIMER_MS, Math.ceil(timeoutMs)));
  return nact.query(ref, (replyTo: Ref<R>) => build(replyTo), bounded) as Promise<R>;
}

export function stopActor(ref: AnyRef): void {
  nact.stop(ref);
}

/**
 * nact names allow only [a-z0-9-$_.+!*'(),]; session ids are arbitrary text. Keeps the safe
 * characters and writes any other as $<hex>, ('$' itself included), so the mapping is one-to-one.
 */
export function actorName(id: string): string {
  return id.replace(/[^A-Za-z0-9_.-]/gu, (ch) => `$${ch.codePointAt(0)!.toString(16)},`);
}

export interface ActorNode {
  name: string;
  mailbox: number;
  busy: boolean;
  children: ActorNode[];
}

interface ConcreteActor {
  name: string;
  busy: boolean;
  mailbox: { length: number };
  children: Map<string, ConcreteActor>;
}

const require = createRequire(import.meta.url);
const systemMap = require('nact/lib/system-map') as {
  find(name: string): { children: Map<string, ConcreteActor> } | undefined;
  find(name: string, ref: AnyRef): ConcreteActor | undefined;
};

/** Messages waiting in an actor's mailbox (0 once it has stopped). */
export function waitingMessages(ref: AnyRef): number {
  const r = ref as unknown as { system: { name: string } };
  return systemMap.find(r.system.name, ref)?.mailbox.length ?? 0;
}

/** The live actor tree with mailbox sizes, for `debug actors` and the REPL. */
export function describeActors(system: SystemRef): ActorNode[] {
  const concrete = systemMap.find((system as unknown as { system: { name: string } }).system.name);
  if (concrete === undefined) return [];
  return [...concrete.children.values()].map(describeActor);
}

function describeActor(actor: ConcreteActor): ActorNode {
  return {
    name: actor.name,
    mailbox: actor.mailbox.length,
    busy: actor.busy,
    children: [...actor.children.values()].map(describeActor),
  };
}
