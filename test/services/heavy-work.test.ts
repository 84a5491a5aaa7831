import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/core/errors.js';
import { currentTenant, runAsTenant } from '../../src/core/tenant-context.js';
import { HeavyWork } from '../../src/services/heavy-work.js';

const limits = { max: 3, perOrganization: 2, perPrincipal: 1, queueMs: 60 };

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { open, opened };
}

describe('HeavyWork', () => {
  it('answers 429 http:request:rate-limited with Retry-After when the work cannot start in time', async () => {
    const heavy = new HeavyWork(limits);
    const g = gate();
    const running = heavy.run({ organizationId: 'a', principalId: 'p' }, {}, () => g.opened);
    const error = await heavy
      .run({ organizationId: 'a', principalId: 'p' }, {}, async () => 'never')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe('http:request:rate-limited');
    expect((error as AppError).status).toBe(429);
    expect((error as AppError).headers?.['retry-after']).toBe('1');
    expect(heavy.stats().get('a')).toMatchObject({ queued: 1, throttled: 1 });
    // Another organization is not held back by the first one's full share.
    await expect(heavy.run({ organizationId: 'b', principalId: 'q' }, {}, async () => 'ok')).resolves.toBe('ok');
    g.open();
    await running;
  });

  it("counts a principal's share per organization: work for one never holds back its work for another", async () => {
    const heavy = new HeavyWork({ max: 8, perOrganization: 4, perPrincipal: 2, queueMs: 60 });
    const g = gate();
    const inGlobex = [1, 2].map(() => heavy.run({ organizationId: 'globex', principalId: 'p' }, {}, () => g.opened));
    const refused = await heavy
      .run({ organizationId: 'globex', principalId: 'p' }, {}, async () => 'never')
      .catch((e: unknown) => e);
    expect((refused as AppError).code).toBe('http:request:rate-limited');
    expect((refused as AppError).description).toContain("principal's share in this organization");
    // The same principal's work for another organization starts at once, up to its share there.
    const inAcme = [1, 2].map(() => heavy.run({ organizationId: 'acme', principalId: 'p' }, {}, () => g.opened));
    expect(heavy.running).toBe(4);
    expect(heavy.waiting).toBe(0);
    expect(heavy.stats().get('acme')).toBeUndefined();
    g.open();
    await Promise.all([...inGlobex, ...inAcme]);
  });

  it('waits instead of answering 429 when asked to', async () => {
    const heavy = new HeavyWork(limits);
    const g = gate();
    const running = heavy.run({ organizationId: 'a', principalId: 'p' }, {}, () => g.opened);
    const waiting = heavy.run({ organizationId: 'a', principalId: 'p' }, { wait: true }, async () => 'done');
    setTimeout(g.open, 150);
    await expect(waiting).resolves.toBe('done');
    await running;
  });

  it('runs the work as its organization, keeping the rest of the tenant context', async () => {
    const heavy = new HeavyWork(limits);
    const seen = await runAsTenant({ address: '10.0.0.1', principalId: 'p' }, () =>
      heavy.run({ organizationId: 'org-1', principalId: 'p' }, {}, async () => currentTenant()),
    );
    expect(seen).toEqual({ address: '10.0.0.1', principalId: 'p', organizationId: 'org-1' });
  });

  it('reads each step of an iterator in its own turn, so two readers of one principal alternate', async () => {
    const heavy = new HeavyWork({ ...limits, perPrincipal: 1 });
    const order: string[] = [];
    async function* steps(name: string) {
      for (let i = 0; i < 3; i++) {
        await new Promise((resolve) => setTimeout(resolve, 5));
        order.push(`${name}${i}`);
        yield i;
      }
    }
    const drain = async (name: string) => {
      for await (const _ of heavy.eachStep({ organizationId: 'a', principalId: 'p' }, undefined, steps(name)));
    };
    await Promise.all([drain('x'), drain('y')]);
    expect(order).toHaveLength(6);
    // Never three steps of one reader in a row while the other waits.
    expect(order.join(',')).not.toMatch(/x0,x1,x2|y0,y1,y2/);
  });
});
