// The flags of the commands that run or start a daemon (`daemon`, `start`, `web`; `chat` and `acp`
// start one when none runs): the HTTP edge's, an identity provider's, the webhooks' and
// retention's, a prompt's files', each also as the arguments a daemon started in the background gets. And what such a
// command checks before it starts one.
import { InvalidArgumentError, type Command } from 'commander';
import { resolve } from 'node:path';
import type { JwtOptions } from '../edge/jwt-verifier.js';
import { parseListenAddress } from '../edge/listen-address.js';
import { parseWebhookEvents, WEBHOOK_EVENTS, type WebhookEvent } from '../protocol/webhook-events.js';
import { homeFrom } from '../protocol/home-paths.js';
import { DEFAULT_BLOB_TYPES, DEFAULT_CONTENT_BOUNDS, type ContentBounds } from '../protocol/content.js';
import { collect, loginDaysOption, positiveNumber, storeForChildren } from './cli-options.js';
import type { HttpOptions } from './commands/daemon.js';

/** The HTTP edge's options (PROTOCOL.md §5), on `daemon` and `start`. */
export function httpOptions(command: Command): Command {
  return jwtOptions(command)
    .option('--listen <host:port>', 'also serve HTTP (REST, SSE, WebSocket, the page) here; port 0 picks one (default: $TURNHOST_LISTEN, else none)')
    .option('--allow-host <name>', 'a Host name besides localhost to serve on a loopback address (a reverse proxy); repeatable', collect, [])
    .option('--cors-origin <origin>', 'an origin whose pages may call the edge; repeatable', collect, [])
    .option('--metrics-public', 'serve /metrics without the token')
    .option('--public-url <url>', 'the address people use, when behind a proxy (https makes the login cookie Secure)')
    .addOption(loginDaysOption());
}

/** An identity provider's JWTs (PROTOCOL.md §5.6), on `daemon`, `start` and `web`. */
export function jwtOptions(command: Command): Command {
  return command
    .option('--jwt-jwks <url>', "take JWTs signed with the keys of this JWKS URL (the provider's jwks_uri)")
    .option('--jwt-jwks-file <file>', 'take JWTs signed with the keys of this JWKS file', (file: string) => resolve(file))
    .option('--jwt-issuer <iss>', 'the issuer a JWT must name')
    .option('--jwt-audience <aud>', 'the audience a JWT must name')
    .option('--jwt-user-claim <claim>', 'the claim that names the user (default sub)')
    .option('--jwt-admin-claim <claim>', 'the claim that, when true, makes the user an admin (default turnhost_admin)');
}

export interface JwtFlags {
  jwtJwks?: string;
  jwtJwksFile?: string;
  jwtIssuer?: string;
  jwtAudience?: string;
  jwtUserClaim?: string;
  jwtAdminClaim?: string;
}

/** The JWT options as a daemon's; undefined when no key set is given (and then no other --jwt-* may be). */
export function jwtFrom(opts: JwtFlags): JwtOptions | undefined {
  if (opts.jwtJwks !== undefined && opts.jwtJwksFile !== undefined) throw new InvalidArgumentError('give --jwt-jwks or --jwt-jwks-file, not both');
  const jwks = opts.jwtJwks !== undefined ? { url: new URL(opts.jwtJwks).href } : opts.jwtJwksFile !== undefined ? { file: opts.jwtJwksFile } : undefined;
  if (jwks === undefined) {
    if (jwtArgs(opts).length > 0) throw new InvalidArgumentError('the --jwt-* options need --jwt-jwks or --jwt-jwks-file');
    return undefined;
  }
  return { jwks, issuer: opts.jwtIssuer, audience: opts.jwtAudience, userClaim: opts.jwtUserClaim, adminClaim: opts.jwtAdminClaim };
}

export function jwtArgs(opts: JwtFlags): string[] {
  const flags: [string, string | undefined][] = [
    ['--jwt-jwks', opts.jwtJwks],
    ['--jwt-jwks-file', opts.jwtJwksFile],
    ['--jwt-issuer', opts.jwtIssuer],
    ['--jwt-audience', opts.jwtAudience],
    ['--jwt-user-claim', opts.jwtUserClaim],
    ['--jwt-admin-claim', opts.jwtAdminClaim],
  ];
  return flags.flatMap(([flag, value]) => (value === undefined ? [] : [flag, value]));
}

/** Webhooks (PROTOCOL.md §8.2), on `daemon`, `start` and `web`. */
export function webhookOptions(command: Command): Command {
  return command
    .option('--webhook <url>', 'POST each event (turn.end, turn.error, request.open, schedule.fired), signed, to this URL; repeatable', webhookUrl, [])
    .option('--webhook-events <list>', `the events sent, comma-separated (default: all: ${WEBHOOK_EVENTS.join(',')})`, webhookEvents);
}

export function webhookEvents(text: string): WebhookEvent[] {
  try {
    return parseWebhookEvents(text);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

export interface WebhookFlags {
  webhook: string[];
  webhookEvents?: WebhookEvent[];
}

function webhookUrl(value: string, previous: string[]): string[] {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidArgumentError('--webhook: not a URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new InvalidArgumentError('--webhook: an http: or https: URL');
  return [...previous, value];
}

export function webhookArgs(opts: WebhookFlags): string[] {
  return opts.webhook.flatMap((url) => ['--webhook', url]); // --webhook-events goes with the host's options
}

/** Retention (PROTOCOL.md §2.3), off by default: on `daemon`, `start` and `web`. */
export function retentionOptions(command: Command): Command {
  return command
    .option('--retention-days <n>', 'delete sessions idle longer than this many days (fractions allowed), pinned ones never (default: $TURNHOST_RETENTION_DAYS, else never)', positiveNumber)
    .option('--archive-after-days <n>', 'archive sessions idle longer than this many days instead (fractions allowed)', positiveNumber)
    .option('--retention-sweep-secs <s>', 'how often retention looks (default 3600)', positiveNumber)
    .option('--unnamed-upload-hours <h>', 'forget an uploaded file no session names after this many hours (default 24)', positiveNumber);
}

export interface RetentionFlags {
  retentionDays?: number;
  archiveAfterDays?: number;
  retentionSweepSecs?: number;
  unnamedUploadHours?: number;
}

/** The flags, with $TURNHOST_RETENTION_DAYS when --retention-days is not given. */
export function retentionFrom(opts: RetentionFlags): RetentionFlags {
  const fromEnv = process.env['TURNHOST_RETENTION_DAYS'];
  const days = opts.retentionDays ?? (fromEnv ? positiveNumber(fromEnv) : undefined);
  return {
    ...(days === undefined ? {} : { retentionDays: days }),
    ...(opts.archiveAfterDays === undefined ? {} : { archiveAfterDays: opts.archiveAfterDays }),
    ...(opts.retentionSweepSecs === undefined ? {} : { retentionSweepSecs: opts.retentionSweepSecs }),
    ...(opts.unnamedUploadHours === undefined ? {} : { unnamedUploadHours: opts.unnamedUploadHours }),
  };
}

/** The flags as a background daemon's arguments (the environment reaches it by itself). */
export function retentionArgs(opts: RetentionFlags): string[] {
  return [
    ...(opts.retentionDays === undefined ? [] : ['--retention-days', String(opts.retentionDays)]),
    ...(opts.archiveAfterDays === undefined ? [] : ['--archive-after-days', String(opts.archiveAfterDays)]),
    ...(opts.retentionSweepSecs === undefined ? [] : ['--retention-sweep-secs', String(opts.retentionSweepSecs)]),
    ...(opts.unnamedUploadHours === undefined ? [] : ['--unnamed-upload-hours', String(opts.unnamedUploadHours)]),
  ];
}

/** What a prompt may carry beyond text (PROTOCOL.md §2.4), on `daemon` and `start`. */
export function contentOptions(command: Command): Command {
  return command
    .option('--max-blob-mib <n>', 'the largest file a prompt or an upload may carry (default 20)', positiveNumber)
    .option('--max-prompt-mib <n>', "the most a prompt's files may hold together (default 50)", positiveNumber)
    .option('--blob-types <types>', `the MIME types a file may have, comma-separated, a family as image/* (default ${DEFAULT_BLOB_TYPES.join(',')})`, blobTypes);
}

function blobTypes(value: string): string[] {
  const types = value.split(',').map((t) => t.trim().toLowerCase()).filter((t) => t !== '');
  if (types.length === 0 || types.some((t) => !/^[a-z0-9.+-]+\/([a-z0-9.+-]+|\*)$/.test(t))) throw new InvalidArgumentError('a comma-separated list of MIME types, such as image/*,application/pdf');
  return types;
}

export interface ContentFlags {
  maxBlobMib?: number;
  maxPromptMib?: number;
  blobTypes?: string[];
}

const MIB = 1024 * 1024;

export function contentFrom(opts: ContentFlags): ContentBounds {
  return {
    maxBlobBytes: Math.floor((opts.maxBlobMib ?? DEFAULT_CONTENT_BOUNDS.maxBlobBytes / MIB) * MIB),
    maxPromptBytes: Math.floor((opts.maxPromptMib ?? DEFAULT_CONTENT_BOUNDS.maxPromptBytes / MIB) * MIB),
    types: opts.blobTypes ?? DEFAULT_CONTENT_BOUNDS.types,
  };
}

export function contentArgs(opts: ContentFlags): string[] {
  return [
    ...(opts.maxBlobMib === undefined ? [] : ['--max-blob-mib', String(opts.maxBlobMib)]),
    ...(opts.maxPromptMib === undefined ? [] : ['--max-prompt-mib', String(opts.maxPromptMib)]),
    ...(opts.blobTypes === undefined ? [] : ['--blob-types', opts.blobTypes.join(',')]),
  ];
}

/** The edge's options as a daemon's, or undefined when it does not listen. */
export function httpFrom(opts: { listen?: string; allowHost: string[]; corsOrigin: string[]; metricsPublic?: boolean; publicUrl?: string; loginDays?: number } & JwtFlags): HttpOptions | undefined {
  const listen = opts.listen ?? (process.env['TURNHOST_LISTEN'] || undefined);
  const jwt = jwtFrom(opts);
  if (listen === undefined) return undefined;
  return {
    ...(jwt === undefined ? {} : { jwt }),
    listen: parseListenAddress(listen),
    allowHosts: opts.allowHost,
    corsOrigins: opts.corsOrigin,
    metricsPublic: opts.metricsPublic === true,
    ...(opts.publicUrl === undefined ? {} : { publicUrl: opts.publicUrl }),
    ...(opts.loginDays === undefined ? {} : { loginDays: opts.loginDays }),
  };
}

/** The same options again, for a daemon started in the background. */
export function httpArgs(opts: { listen?: string; allowHost: string[]; corsOrigin: string[]; metricsPublic?: boolean; publicUrl?: string; loginDays?: number } & JwtFlags): string[] {
  return [
    ...jwtArgs(opts),
    ...(opts.listen === undefined ? [] : ['--listen', opts.listen]),
    ...opts.allowHost.flatMap((name) => ['--allow-host', name]),
    ...opts.corsOrigin.flatMap((origin) => ['--cors-origin', origin]),
    ...(opts.metricsPublic ? ['--metrics-public'] : []),
    ...(opts.publicUrl === undefined ? [] : ['--public-url', opts.publicUrl]),
    ...(opts.loginDays === undefined ? [] : ['--login-days', String(opts.loginDays)]),
  ];
}

/**
 * What a command that may start a daemon does first: a broken agent config fails here, in one line
 * with exit 78, not later in a background daemon; the store goes to the daemon's environment. A
 * daemon that already runs has its own catalogue: then `--agent` names one of its agents, and the
 * file is not read here.
 */
export async function beforeDaemonStart(opts: { home?: string; agent?: string; agentConfig?: string; store?: string }): Promise<void> {
  const home = homeFrom(opts.home);
  const running = await (await import('./daemon-client.js')).connectDaemon(home);
  running?.close();
  if (running === null) await (await import('../agents/loader.js')).checkedCatalogue(opts.agent, { home, flag: opts.agentConfig, env: process.env });
  storeForChildren(opts);
}
