import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { runAsTenant, type TenantContext } from '../../core/tenant-context.js';

declare module 'fastify' {
  interface FastifyRequest {
    tenant: TenantContext | null;
  }
}

/**
 * Every request runs with its tenant context (core/tenant-context.ts): the client address from the start, the
 * principal once authenticated. The database's fair queues read it, so a tenant's statements take turns with
 * other tenants' instead of queueing ahead of them.
 *
 * The context is entered in `onRequest` and entered again in `preValidation`: a body is read from the socket's
 * events, outside the request's async context, so the hooks after parsing would otherwise run without it.
 */
export function installTenantContext(app: FastifyInstance): void {
  app.decorateRequest('tenant', null);
  app.addHook('onRequest', (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
    const tenant: TenantContext = { address: request.ip };
    request.tenant = tenant;
    runAsTenant(tenant, done);
  });
  app.addHook('preValidation', (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
    const tenant = request.tenant ?? { address: request.ip };
    if (request.caller !== null) tenant.principalId = request.caller.principalId;
    runAsTenant(tenant, done);
  });
}
