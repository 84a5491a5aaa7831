/** The benchmark principal (owner of `bench-org`, with a token) and a `local` cloud account. */
export const BENCH_TOKEN = 'berth_k-bench_bench-secret-0000000000000000';
export const BENCH_ORG = 'bench-org';
export const BENCH_ACCOUNT = 'bench-acct';
export const BENCH_REGION = 'eu-west-1';

/** The fixture every b-benchmark starts from; `extra` adds collections (projects, module instances, …). */
export function benchFixture(extra: Record<string, unknown[]> = {}): Record<string, unknown[]> {
  return {
    organizations: [{ id: BENCH_ORG, name: 'Bench', permittedIdentityProviders: [] }],
    principals: [
      {
        id: 'bench-owner',
        name: 'Bench owner',
        memberships: [{ organizationId: BENCH_ORG, role: 'owner' }],
        apiKeys: [{ id: 'k-bench', token: BENCH_TOKEN, organizationId: BENCH_ORG }],
      },
    ],
    cloudAccounts: [{ id: BENCH_ACCOUNT, organizationId: BENCH_ORG, provider: 'local', region: BENCH_REGION }],
    ...extra,
  };
}
