/** A fixture's `ui.logs` log source (of a module instance) in us-east-1; `extra` adds e.g. `logStreamPrefix`. */
export function logSource(
  id: string,
  cloudAccountId: string,
  logGroup: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return { id, kind: 'ui.logs', cloudAccountId, region: 'us-east-1', logGroup, ...extra };
}
