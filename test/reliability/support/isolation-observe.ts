// Runs the whole matrix against a Berth process: what the test checks and the script writes down.
import type { Http } from './isolation-http.js';
import { runCases, type CaseResult } from './isolation-cases.js';
import { mint, runMatrix, type MatrixResult, type Minted } from './isolation-matrix.js';
import { renderDocument } from './isolation-render.js';

export interface Observed {
  minted: Minted;
  matrix: MatrixResult[];
  cases: CaseResult[];
  document: string;
}

export async function observe(http: Http): Promise<Observed> {
  const minted = await mint(http);
  const matrix = await runMatrix(http, minted);
  const cases = await runCases(http, minted);
  return { minted, matrix, cases, document: renderDocument(matrix, cases) };
}
