import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { addressKey } from '../../core/client-address.js';
import { runAsTenant, type TenantContext } from '../../core/tenant-context.js';
import { requestOrganization } from './rate-limit.js';

declare module 'fastify' {
  interface FastifyRequest {
    tenant: TenantContext | null;
  }
}

/**
 * Every request runs with its tenant context (core/tenant-context.ts): the client address from the start, the
 * principal once authenticated, and its organization when the request is for one (`requestOrganization`). The
 * database's fair queues read it, so a tenant's statements take turns with other tenants' instead of queueing
 * ahead of them.
 *
 * The context is entered in `onRequest` and entered again in `preValidation`: a body is read from the socket's
 * events, outside the request's async context, so the hooks after parsing would otherwise run without it.
 */
export function installTenantContext(app: FastifyInstance): void {
  app.decorateRequest('tenant', null);
  app.addHook('onRequest', (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
    // Grouped as every per-address limit groups it (an IPv6 client by its /64; behind TRUST_PROXY the forwarded client).
    const tenant: TenantContext = { address: addressKey(request.ip) };
    request.tenant = tenant;
    runAsTenant(tenant, done);
  });
  app.addHook('preValidation', (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
    const tenant = request.tenant ?? { address: addressKey(request.ip) };
    if (request.caller !== null) {
      tenant.principalId = request.caller.principalId;
      // A request for one organization (a scoped key, or a path naming one of the caller's) takes that
      // organization's turns, as heavy work does: the statements of a key one organization minted for a
      // principal then never queue ahead of the same principal's requests for its other organizations.
      const organizationId = requestOrganization(request);
      if (organizationId !== undefined) tenant.organizationId = organizationId;
    }
    runAsTenant(tenant, done);
  });
}
