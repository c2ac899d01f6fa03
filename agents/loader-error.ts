/** sysexits' EX_CONFIG: a configuration the process cannot use. */
export const EXIT_CONFIG = 78;

/** A configuration error: the process exits with EX_CONFIG (78). */
export class AgentLoadError extends Error {
  readonly exitCode = EXIT_CONFIG;
}
