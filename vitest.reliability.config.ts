import { defineConfig } from 'vitest/config';

/** `npm run test:reliability`: the reliability suite at full size, one file at a time (latency figures stay honest). */
export default defineConfig({
  test: {
    include: ['test/reliability/**/*.test.ts'],
    testTimeout: 600_000,
    hookTimeout: 120_000,
    globalSetup: ['test/support/pglite-template.ts', 'test/reliability/support/global-setup.ts'],
    env: { BERTH_RELIABILITY: 'full' },
    pool: 'forks',
    poolOptions: { forks: { maxForks: 1, minForks: 1 } },
    fileParallelism: false,
  },
});
