import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Its latency figures need the machine to itself: only `npm run test:reliability` runs it (one file at a time).
    exclude: [...configDefaults.exclude, 'test/reliability/noisy-neighbour.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two cores: PGlite instances are heavy, keep the pool small.
    pool: 'forks',
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    // The reliability files run a fast subset here and add their figures to the same summary table.
    // The template every in-memory PGlite of the suite starts from (test/support/pglite-template.ts).
    globalSetup: ['test/support/pglite-template.ts', 'test/reliability/support/global-setup.ts'],
  },
});
