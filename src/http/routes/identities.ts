import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { callerOf } from '../plugins/auth.js';
import { DataOf, errorResponses } from '../../core/schemas/common.js';
import { IdentityParams, IdentitySchema, MemberIdentityParams, MemberParams } from '../../core/schemas/sign-in.js';
import type { IdentityLinks } from '../../services/sign-in/identities.js';

/** The identities (provider, issuer, subject) linked to principals: one's own, and an admin's view of a member's. */
export const identityRoutes: FastifyPluginAsyncTypebox<{ links: IdentityLinks }> = async (app, { links }) => {
  app.get(
    '/me/identities',
    {
      schema: {
        operationId: 'listMyIdentities',
        tags: ['identity'],
        summary: 'The identities linked to the caller, oldest first',
        response: { 200: DataOf(Type.Array(IdentitySchema)), ...errorResponses() },
      },
    },
    async (request) => ({ data: await links.listOwn(callerOf(request)) }),
  );

  app.delete(
    '/me/identities/:identityId',
    {
      schema: {
        operationId: 'unlinkMyIdentity',
        tags: ['identity'],
        summary: 'Unlink one of the caller’s identities; the sessions made with it end at once',
        params: IdentityParams,
        response: { 204: Type.Null({ description: 'Unlinked' }), ...errorResponses(403, 404) },
      },
    },
    async (request, reply) => {
      await links.unlinkOwn(callerOf(request), request.params.identityId);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/organizations/:organizationId/members/:principalId/identities',
    {
      schema: {
        operationId: 'listMemberIdentities',
        tags: ['identity'],
        summary: "A member's linked identities (admin or owner of the organization)",
        params: MemberParams,
        response: { 200: DataOf(Type.Array(IdentitySchema)), ...errorResponses(403, 404) },
      },
    },
    async (request) => {
      const { organizationId, principalId } = request.params;
      return { data: await links.listMember(callerOf(request), organizationId, principalId) };
    },
  );

  app.delete(
    '/organizations/:organizationId/members/:principalId/identities/:identityId',
    {
      schema: {
        operationId: 'unlinkMemberIdentity',
        tags: ['identity'],
        summary:
          "Unlink a member's identity (admin or owner), only when the member belongs to no other organization; " +
          'its sessions made with it end at once',
        params: MemberIdentityParams,
        response: { 204: Type.Null({ description: 'Unlinked' }), ...errorResponses(403, 404) },
      },
    },
    async (request, reply) => {
      const { organizationId, principalId, identityId } = request.params;
      await links.unlinkMember(callerOf(request), organizationId, principalId, identityId);
      return reply.code(204).send(null);
    },
  );
};
