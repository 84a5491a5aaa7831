import type { Executor } from '../db.js';

/**
 * The cluster's cursor secret: `candidate` when none is stored yet, else the stored one. Replicas racing on the first
 * start each offer their own; the insert keeps the first committed and the read gives every replica that one.
 */
export async function storedCursorSecret(db: Executor, candidate: string): Promise<string> {
  await db
    .insertInto('cursor_secret')
    .values({ id: true, secret: candidate })
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
  const row = await db.selectFrom('cursor_secret').select('secret').where('id', '=', true).executeTakeFirstOrThrow();
  return row.secret;
}
