// The webhooks' signing secret (PROTOCOL.md §8.2): `whsec_` and 24 random bytes in base64, as the
// Standard Webhooks libraries take it, in `<home>/webhook.secret` (0600), made at first use;
// `turnhost webhook secret --rotate` replaces it and the daemon signs with the new one within a second.
// It is printed only by `webhook secret`; never logged, never in an error.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { readOrMakeSecretFile, replaceSecretFile, WatchedSecretFile } from './secret-file.js';

/** How often the daemon looks at the file for a rotation: a stat per delivery was a syscall per event. */
const LOOK_EVERY_MS = 1000;

function webhookSecretPath(home: string): string {
  return join(home, 'webhook.secret');
}

const newSecret = (): string => `whsec_${randomBytes(24).toString('base64')}`;

export function readOrMakeWebhookSecret(home: string): string {
  return readOrMakeSecretFile(webhookSecretPath(home), newSecret);
}

export function rotateWebhookSecret(home: string): string {
  return replaceSecretFile(webhookSecretPath(home), newSecret);
}

/** The secret the daemon signs with: the file looked at once a second at most. */
export function watchedWebhookSecret(home: string): WatchedSecretFile {
  return new WatchedSecretFile(webhookSecretPath(home), newSecret, LOOK_EVERY_MS);
}
