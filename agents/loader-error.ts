/** A configuration error: the process exits with EX_CONFIG (78). */
export class AgentLoadError extends Error {
  readonly exitCode = 78;
}
