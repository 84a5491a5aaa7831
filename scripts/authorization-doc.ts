/**
 * Regenerates docs/authorization.md by asking a real Berth process: `npx tsx scripts/authorization-doc.ts`
 * (PGlite; set TEST_DATABASE_URL to ask one on PostgreSQL — the answers must be the same).
 * test/reliability/isolation.test.ts fails when Berth's answers and the document differ.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startBerth } from '../test/reliability/support/berth-process.js';
import { observe } from '../test/reliability/support/isolation-observe.js';
import { DOCUMENT_PATH, MATRIX_ENV } from '../test/reliability/support/isolation-render.js';
import { CROSSED_ROWS, isolationWorld, SESSION_ROWS } from '../test/reliability/support/isolation-world.js';
import { ROOT } from '../test/support/process.js';

const berth = await startBerth({ fixture: isolationWorld(), sql: [...CROSSED_ROWS, ...SESSION_ROWS], env: MATRIX_ENV });
try {
  const { document, cases } = await observe(berth);
  writeFileSync(join(ROOT, DOCUMENT_PATH), document);
  const differing = cases.filter((c) => c.difference !== undefined).length;
  process.stdout.write(
    `wrote ${DOCUMENT_PATH}${differing > 0 ? ` (${differing} isolation cases differ: see the document)` : ''}\n`,
  );
} finally {
  await berth.close();
}
