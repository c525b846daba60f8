/**
 * A spend report's cells as they cross the wire (src/reports/report-cells.ts, bench/FINDINGS.md): zeros
 * are sent as NULL and days as numbers, yet every figure reads exactly as the roll-up writes it.
 * A zero with decimals keeps its text ("0.000", "0.0"), a plain zero reads "0" (or 0), a day reads
 * YYYY-MM-DD from 1970 on, per row (the roll-up's own grain) and summed (grouped coarser).
 */
import { Database } from '../../src/database/database.js';
import { spendReport } from '../../src/reports/spend-report.js';
import { freshDatabase } from '../support/harness.js';

let db: Database;
beforeAll(async () => {
  db = new Database(await freshDatabase(), 2);
});
afterAll(() => db.close());

test('zeros and days read exactly as the roll-up has them, per row and summed', async () => {
  const {
    rows: [p],
  } = await db.query<{ id: string }>(`INSERT INTO project (id, name) VALUES (gen_random_uuid(), 'cells') RETURNING id`);
  // (day, model, amount, video seconds, images, input tokens, unpriced): zeros of every kind, with and without
  // decimals.
  const rollup: Array<[string, string, string, string, number, number, number]> = [
    ['1970-01-01', 'veo-3.1', '0.000', '0.0', 0, 0, 0],
    ['1970-01-02', 'veo-3.1', '1.5', '0', 0, 0, 1],
    ['2026-11-26', 'veo-3.1', '0', '12.50', 0, 0, 0],
    ['2026-11-26', 'gpt-5.6-luna', '0.0000001', '0', 0, 123456789012, 0],
    ['2026-12-31', 'seedream-4.0', '0.04', '0', 3, 0, 0],
  ];
  for (const [day, model, amount, seconds, images, input, unpriced] of rollup) {
    await db.query(
      `INSERT INTO spend_rollup (day, project_id, model, unit, status, tasks, unpriced_tasks, amount, input_tokens, video_seconds, images)
       VALUES ($1, $2, $3, $4, 'ready', 1, $5, $6, $7, $8, $9)`,
      [day, p!.id, model, model === 'gpt-5.6-luna' ? 'CREDITS' : 'USD', unpriced, amount, input, seconds, images],
    );
  }
  const range = { from: new Date('1970-01-01T00:00:00Z'), to: new Date('2027-01-01T00:00:00Z'), projectIds: [p!.id] };
  const fields = (r: Awaited<ReturnType<typeof spendReport>>[number]) => [
    r.keys.join('|'),
    r.amount,
    r.videoSeconds,
    r.images,
    r.inputTokens,
    r.outputTokens,
    r.unpricedTasks,
    r.tasks,
  ];

  const perRow = await spendReport(db, { ...range, groupBy: ['project', 'model', 'day'] });
  const { rows: expected } = await db.query<{
    k: string;
    amount: string;
    seconds: string;
    images: number;
    input: string;
    unpriced: number;
  }>(
    `SELECT 'cells|' || model || '|' || to_char(day, 'YYYY-MM-DD') AS k, amount::text, video_seconds::text AS seconds, images, input_tokens::text AS input, unpriced_tasks AS unpriced
     FROM spend_rollup_total WHERE project_id = $1 ORDER BY model COLLATE "C", day`,
    [p!.id],
  );
  expect(perRow.map(fields)).toEqual(
    expected.map((e) => [e.k, e.amount, e.seconds, e.images, e.input, '0', e.unpriced, 1]),
  );
  expect(perRow.find((r) => r.keys[2] === '1970-01-01')).toMatchObject({
    amount: '0.000',
    videoSeconds: '0.0',
    images: 0,
    inputTokens: '0',
  });

  const summed = await spendReport(db, { ...range, groupBy: ['model'] });
  expect(summed.map(fields)).toEqual([
    ['gpt-5.6-luna', '0.0000001', '0', 0, '123456789012', '0', 0, 1],
    ['seedream-4.0', '0.04', '0', 3, '0', '0', 0, 1],
    ['veo-3.1', '1.500', '12.50', 0, '0', '0', 1, 3],
  ]);
});

test('queryTexts: every cell as PostgreSQL sent it, without type parsing', async () => {
  // What spendReport reads its rows with: counts become numbers there, every other figure stays text.
  const rows = await db.queryTexts(
    `SELECT 42::int, 9007199254740993::bigint, 0.000::numeric, 12.50::numeric, date '2026-11-26', NULL::int, 'USD'::"Unit", true, 'naïve "x"'::text`,
  );
  expect(rows).toEqual([['42', '9007199254740993', '0.000', '12.50', '2026-11-26', null, 'USD', 't', 'naïve "x"']]);
  // The pool's own parsers are untouched: the same cells through queryArrays are typed as before.
  const [typed] = await db.queryArrays('SELECT 42::int, 7::bigint');
  expect(typed).toEqual([42, '7']);
});
