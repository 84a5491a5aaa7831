/**
 * Berth's layers (shared/STYLE.md): imports point downward only.
 * core ← store ← providers ← services ← http; cli, fixtures, server and
 * runtime sit on top. `config.ts` is parsed once at the top and passed down;
 * layers may import its types.
 */
const layer = (name) => `^src/${name}/`;
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'core-is-pure',
      comment: 'core/ is pure code: it imports nothing of the app and no I/O modules',
      severity: 'error',
      from: { path: layer('core') },
      to: { pathNot: [layer('core'), '^node_modules', '^node:crypto$', 'crypto', '^node:async_hooks$'], dependencyTypesNot: ['core'] },
    },
    {
      name: 'core-no-io',
      comment: 'core/ does no I/O (crypto hashes, net.isIP and the async context of a request are pure)',
      severity: 'error',
      from: { path: layer('core') },
      to: { dependencyTypes: ['core'], pathNot: ['^(node:)?crypto$', '^(node:)?net$', '^(node:)?async_hooks$'] },
    },
    {
      name: 'store-below-providers',
      comment: 'store/ imports only core/',
      severity: 'error',
      from: { path: layer('store') },
      to: { path: '^src/', pathNot: [layer('store'), layer('core')] },
    },
    {
      name: 'providers-below-services',
      comment: 'providers/ import only core/, store/ and config types',
      severity: 'error',
      from: { path: layer('providers') },
      to: { path: '^src/', pathNot: [layer('providers'), layer('store'), layer('core'), '^src/config\\.ts$'] },
    },
    {
      name: 'services-below-http',
      comment: 'services/ import core/, store/, providers/; never http/, cli/ or Fastify',
      severity: 'error',
      from: { path: layer('services') },
      to: {
        path: ['^src/(http|cli|fixtures)/', '^src/server\\.ts$', 'node_modules/(fastify|@fastify)/'],
      },
    },
    {
      name: 'http-over-services',
      comment: 'http/ imports services/ and core/, never store/ or providers/ directly',
      severity: 'error',
      from: { path: layer('http') },
      to: { path: ['^src/store/', '^src/providers/'] },
    },
    {
      name: 'no-circular',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'] },
  },
};
