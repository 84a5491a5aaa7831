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
    globalSetup: ['test/reliability/support/global-setup.ts'],
  },
});
