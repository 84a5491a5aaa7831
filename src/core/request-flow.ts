import { createHash } from 'node:crypto';

/**
 * The flow a request belongs to in a principal's share of heavy work: its operation and a digest of its parameters
 * as the service received them (after validation). The same request sent many times at once is one flow; waiting
 * work of different flows takes turns (docs/decisions.md, "Within one principal, distinct requests take turns").
 */
export function requestFlow(operation: string, parameters: unknown): string {
  const digest = createHash('sha256')
    .update(JSON.stringify(parameters) ?? '')
    .digest('base64url');
  return `${operation}:${digest.slice(0, 22)}`;
}
