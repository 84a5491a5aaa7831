import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Whose work is running: set for each request (the client address, then the principal once authenticated, and
 * the organization when the request is for one) and narrowed to an organization by heavy work. The database's
 * fair queues read it to serve waiting statements round-robin across tenants, without every call passing it down.
 */
export interface TenantContext {
  /** The client's address (unauthenticated work is shared per address). */
  address?: string;
  principalId?: string;
  organizationId?: string;
}

const storage = new AsyncLocalStorage<TenantContext>();

/** Runs `fn` with `context` as the current tenant (a fresh object: callers may fill it in later). */
export function runAsTenant<T>(context: TenantContext, fn: () => T): T {
  return storage.run(context, fn);
}

/** The current tenant context, or undefined outside any request (migrations, the CLI, background work). */
export function currentTenant(): TenantContext | undefined {
  return storage.getStore();
}

/**
 * The key fair queues share by: the organization when the work is for one, else the principal, else the
 * client address; work outside any request shares one key.
 */
export function fairnessKey(context: TenantContext | undefined = storage.getStore()): string {
  if (context === undefined) return 'system';
  if (context.organizationId !== undefined) return `org:${context.organizationId}`;
  if (context.principalId !== undefined) return `principal:${context.principalId}`;
  if (context.address !== undefined) return `address:${context.address}`;
  return 'system';
}
