/**
 * A report kept project by project (decisions §22) answers with its parts' own bytes between brackets
 * and commas, never a joined copy of megabytes, and the parts are kept in shared memory, which the
 * reads worker hands to the main thread without a copy (src/reads/posted-answers.ts). When one
 * project's counter moves, only its part is computed again. A real database: the stamps are read
 * from books_change.
 */
import type { Config } from '../../src/config/config.js';
import { Database } from '../../src/database/database.js';
import { ReportCache } from '../../src/report-cache/report-cache.service.js';
import { joinJsonArrays } from '../../src/reports/spend-answers.js';
import { freshDatabase } from '../support/harness.js';

let db: Database;
const ids: string[] = [];

beforeAll(async () => {
  db = new Database(await freshDatabase(), 2);
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO project (id, name) VALUES (gen_random_uuid(), 'alpha'), (gen_random_uuid(), 'beta') RETURNING id`,
  );
  ids.push(...rows.map((r) => r.id));
}, 60_000);

afterAll(async () => {
  await db?.close();
});

const now = new Date();
const scope = {
  projectIds: undefined,
  from: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)),
  to: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)),
};

/** A change in `projectId`'s books this month, as a settlement's roll-up write counts it. */
const change = (projectId: string) =>
  db.query(
    `INSERT INTO books_change (month, project_id, version) VALUES (date_trunc('month', now())::date, $1, 1)
     ON CONFLICT (month, project_id) DO UPDATE SET version = books_change.version + 1`,
    [projectId],
  );

test('the answer is the kept parts themselves, in shared memory; a changed part is computed alone', async () => {
  const cache = new ReportCache(db, { REPORT_CACHE_MB: 64 } as Config);
  const computed: string[] = [];
  const spend = new Map<string, number>();
  // A part big enough to be kept in shared memory (16 KB and more).
  const rows = (id: string) =>
    Buffer.from(JSON.stringify([{ project: id, spend: spend.get(id) ?? 0, padding: 'x'.repeat(40_000) }]));
  const parts = {
    all: async () => {
      computed.push('all');
      return new Map<string, Buffer>();
    },
    one: async (id: string) => {
      computed.push(id);
      return rows(id);
    },
    empty: Buffer.from('[]'),
    join: joinJsonArrays,
  };
  const ask = async () => (await cache.answerByProject({}, performance.now(), 'report', scope, parts))!;
  const text = (pieces: Buffer[]) =>
    JSON.parse(Buffer.concat(pieces).toString()) as Array<{ project: string; spend: number }>;
  const big = (pieces: Buffer[]) => pieces.filter((piece) => piece.length > 1000);

  const first = await ask();
  expect(computed.sort()).toEqual([...ids].sort());
  expect(text(first.value).map((r) => r.project)).toEqual(ids); // by name: alpha, beta
  expect(big(first.value).map((piece) => piece.buffer instanceof SharedArrayBuffer)).toEqual([true, true]);

  const again = await ask();
  expect(again.hit).toBe(true);
  expect(again.digest).toBe(first.digest);
  // The very memory kept: nothing joined into a copy.
  expect(big(again.value).map((piece) => piece.buffer)).toEqual(big(first.value).map((piece) => piece.buffer));

  await change(ids[1]!);
  spend.set(ids[1]!, 1);
  computed.length = 0;
  const changed = await ask();
  expect(computed).toEqual([ids[1]]); // only the changed project's part
  expect(text(changed.value).map((r) => [r.project, r.spend])).toEqual([
    [ids[0], 0],
    [ids[1], 1],
  ]);
  expect(big(changed.value)[0]!.buffer).toBe(big(first.value)[0]!.buffer); // alpha's part as kept
  expect(big(changed.value)[1]!.buffer).not.toBe(big(first.value)[1]!.buffer);
  expect(changed.version).not.toBe(first.version);
  expect(changed.digest).not.toBe(first.digest);
});
