/**
 * "Ours, not billed" (decisions §14) holds only while no statement bills the task. The vendor can
 * bill it in a later file: the next day's export, where it put a task we accepted just before
 * midnight, or a re-send with a row the first file left out. Before, the first file's item stayed
 * open, and taking it took back a charge the vendor did bill: the task's net went to 0 while the
 * later file had matched it at 0.04. Now a statement that bills the task closes the item (nothing
 * taken back, naming the statement), and an acceptance never takes back a billed charge. Over two
 * instances on one database, through the HTTP and GraphQL edges.
 */
import type { Gateway } from '../../src/bootstrap.js';
import { reconcile } from '../../src/ledger/reconcile.js';
import { freshDatabase, gateway, projectWithKey, sql } from '../support/harness.js';
import { accept, items, postStatement, settledTask, statement, task } from '../support/statements.js';

let a: Gateway;
let b: Gateway;
let projectId: string;
const DAY = 86_400_000;
const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const today = Date.parse(`${isoDay(Date.now())}T00:00:00Z`);
const yesterday = isoDay(today - DAY);

beforeAll(async () => {
  const url = await freshDatabase();
  const env = { POLLER_ENABLED: 'false', LEDGER_SEAL_MS: '0', EARLY_WARNING_MS: '0' };
  a = await gateway(url, env);
  b = await gateway(url, env);
  projectId = (await projectWithKey(a, 'billed-later')).projectId;
});
afterAll(async () => {
  await Promise.all([a.close(), b.close()]);
});

/** An item as GraphQL answers it, with its note and who closed it. */
async function item(gw: Gateway, id: string) {
  const [{ s }] = await sql(gw, 'SELECT statement_id::text AS s FROM vendor_recon_item WHERE id = $1', [id]);
  const { state, note, resolvedBy } = (await items(gw, s as string)).find((i) => i.id === id)!;
  return { id, state, note, resolvedBy };
}

/** Yesterday's file bills `other` only, so `late` (accepted at 23:59:59.9) is ours, not billed: that item's id. */
async function notBilledYesterday(late: number, other: number): Promise<string> {
  await settledTask(a, projectId, late, '0.04', new Date(today - 100));
  await settledTask(a, projectId, other, '0.04', new Date(today - DAY / 2));
  const first = await postStatement(a, statement([[other, `${yesterday}T12:00:05Z`, '0.04']]));
  expect(first.status).toBe(201);
  const found = (await items(a, first.body.id)).filter((i) => i.vendorTaskId === String(late));
  expect(found.map((i) => [i.class, i.state])).toEqual([['ours_not_billed', 'open']]);
  return found[0]!.id;
}

test("today's file bills the task accepted before midnight: yesterday's item is closed, nothing taken back, and cannot be taken", async () => {
  const notBilled = await notBilledYesterday(5_100_001, 5_100_002);
  const second = await postStatement(b, statement([[5_100_001, `${isoDay(today)}T00:00:02Z`, '0.04']]));
  expect(second.status).toBe(201);
  expect(await items(b, second.body.id)).toEqual([]); // matched at our figure
  expect(await item(a, notBilled)).toEqual({
    id: notBilled,
    state: 'accepted',
    note: `closed: statement ${second.body.id} bills this task (${isoDay(today)}), where its figure is matched; nothing taken back`,
    resolvedBy: 'ADMIN_TOKEN', // who imported the statement that closed it
  });
  const taken = await accept(a, notBilled);
  expect(taken.body.errors?.[0]?.extensions).toMatchObject({ status: 409 });
  expect(await task(a, 5_100_001)).toMatchObject({ net: '0.04', adjustments: '0', needsReview: false });
  expect(await reconcile(a.db)).toEqual([]);
});

test('billed later at another figure: that difference is the one to decide, and the net becomes the vendor’s, not 0', async () => {
  const notBilled = await notBilledYesterday(5_200_001, 5_200_002);
  const second = await postStatement(b, statement([[5_200_001, `${isoDay(today)}T00:00:03Z`, '0.05']]));
  const [differs] = await items(b, second.body.id);
  expect(differs).toMatchObject({ class: 'amount_differs', ours: '0.04', theirs: '0.05', state: 'open' });
  expect((await item(b, notBilled)).state).toBe('accepted');
  expect((await accept(b, differs!.id)).body.data).toEqual({ acceptVendorDifference: { state: 'accepted' } });
  expect((await accept(a, notBilled)).body.errors?.[0]?.extensions).toMatchObject({ status: 409 });
  expect(await task(a, 5_200_001)).toMatchObject({ net: '0.05', adjustments: '0.01', needsReview: false });
});

test('an item left open before this rule: taking it is refused with 409 naming the statement, nothing written; the next import closes it', async () => {
  const notBilled = await notBilledYesterday(5_300_001, 5_300_002);
  const second = await postStatement(b, statement([[5_300_001, `${isoDay(today)}T00:00:04Z`, '0.04']]));
  // As a database upgraded with such an item open would have it.
  await sql(
    a,
    `UPDATE vendor_recon_item SET state = 'open', note = NULL, resolved_by = NULL, resolved_at = NULL WHERE id = $1`,
    [notBilled],
  );
  const audits = async () => Number((await sql(a, 'SELECT count(*)::int AS n FROM audit_record'))[0]!.n);
  const before = await audits();
  const refused = await accept(a, notBilled);
  expect(refused.body.errors?.[0]?.extensions).toMatchObject({ status: 409 });
  expect(refused.body.errors?.[0]?.message).toBe(
    `statement ${second.body.id} bills this task (${isoDay(today)}), where its figure is matched: there is no charge to take back; the next import closes this item`,
  );
  expect(await audits()).toBe(before);
  expect((await item(a, notBilled)).state).toBe('open');
  expect(await task(a, 5_300_001)).toMatchObject({ net: '0.04', adjustments: '0' });
  // Any later import, of other tasks, closes it.
  await settledTask(a, projectId, 5_300_003);
  await postStatement(a, statement([[5_300_003, `${isoDay(today)}T01:00:00Z`, '0.04']]));
  expect((await item(a, notBilled)).state).toBe('accepted');
});

test('taking the item back while another instance imports the file that bills it: either the import closes it first, or the later file finds the net at 0 and differs; never matched at 0', async () => {
  const rounds = 6;
  for (let r = 0; r < rounds; r++) {
    const late = 5_400_001 + 10 * r;
    const notBilled = await notBilledYesterday(late, late + 1);
    const [taken, second] = await Promise.all([
      accept(a, notBilled),
      postStatement(b, statement([[late, `${isoDay(today)}T00:0${r}:00Z`, '0.04']])),
    ]);
    expect(second.status).toBe(201);
    const later = await items(b, second.body.id);
    const { net } = await task(a, late);
    if (taken.body.errors) {
      // The import came first: the item was closed, the charge stands, the later file matched it.
      expect(taken.body.errors[0]!.extensions).toMatchObject({ status: 409 });
      expect([net, later]).toEqual(['0.04', []]);
    } else {
      // The acceptance came first: the later file sees the net at 0 and says so.
      expect(net).toBe('0');
      expect(later.map((i) => [i.class, i.ours, i.theirs])).toEqual([['amount_differs', '0', '0.04']]);
    }
  }
  expect(await reconcile(a.db)).toEqual([]);
}, 60_000);
