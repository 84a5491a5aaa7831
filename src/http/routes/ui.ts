import { existsSync } from 'node:fs';
import { join } from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { appError } from '../../core/errors.js';

/**
 * The page may load only its own files and talk only to this origin: no inline script or style element, no other
 * origin, never framed. Styles set through the DOM (the table's row offsets) are not covered by style-src.
 */
export const UI_CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** The page's own routes (the app reads the path); everything else under /ui/ is a file or 404. */
const PAGES = ['/ui/', '/ui/logs', '/ui/sign-in'];

/** Set when the answer is sent, so they replace the API's `cache-control: no-store` on the page and its files. */
function pageHeaders(reply: FastifyReply, path: string): void {
  reply.header('content-security-policy', UI_CONTENT_SECURITY_POLICY);
  reply.header('x-frame-options', 'DENY');
  reply.header('referrer-policy', 'no-referrer');
  if (reply.statusCode >= 400) return;
  // Vite names every asset by its content hash: it never changes. The page itself is checked each time.
  reply.header('cache-control', path.startsWith('/ui/assets/') ? 'public, max-age=31536000, immutable' : 'no-cache');
}

/**
 * The log explorer (ui/), as `npm run build` left it in `dir`: public files, no token needed to load them
 * (every call the page makes to the API carries the user's own token). Not part of the OpenAPI document.
 */
export async function uiRoutes(app: FastifyInstance, { dir }: { dir: string }): Promise<void> {
  app.get('/ui', { schema: { hide: true } }, (_request, reply) => reply.redirect('/ui/', 308));
  if (!existsSync(join(dir, 'index.html'))) {
    app.get('/ui/*', { schema: { hide: true } }, async () => {
      throw appError('ui:page:not-built', { description: `No built page in ${dir}: run \`npm run build\`.` });
    });
    return;
  }
  app.addHook('onSend', async (request, reply) => pageHeaders(reply, request.url));
  // A path the file server refuses (a dot file, a way out of the folder: 403) answers like a file it lacks.
  app.setErrorHandler((error: { statusCode?: number }) => {
    if (error.statusCode === 403 || error.statusCode === 404) throw appError('http:route:not-found');
    throw error;
  });
  await app.register(fastifyStatic, {
    root: dir,
    prefix: '/ui/',
    index: false,
    wildcard: true,
    cacheControl: false,
    etag: true,
    lastModified: false,
    dotfiles: 'deny',
  });
  for (const page of PAGES) {
    app.get(page, { schema: { hide: true } }, (_request, reply) => reply.sendFile('index.html'));
  }
}
