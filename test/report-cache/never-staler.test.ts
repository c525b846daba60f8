/**
 * No cached answer is ever staler than the books stamp it claims (decisions §22). While one writer
 * posts twenty adjustments of 2^i thousandths of a dollar to project P through instance B (so P's
 * total says exactly which of them an answer holds), settlements land in project Q through instance
 * A, and last month is closed and reopened, readers on both instances ask for this month's report
 * by project, again and again. After each adjustment the test reads the stamp itself. For every
 * answer: its P total is the first k adjustments, and every adjustment whose stamp the answer's
 * claimed stamp reaches is among them, as is every adjustment that had answered before the read was sent.
 */
import { Decimal } from 'decimal.js';
import type { Gateway } from '../../src/bootstrap.js';
import { Database } from '../../src/database/database.js';
import { readStamp } from '../../src/report-cache/books-stamp.js';
import { ADMIN, freshDatabase, gateway, graphql, http, projectWithKey, submitChat } from '../support/harness.js';

let a: Gateway;
let b: Gateway;
let db: Database;

beforeAll(async () => {
  const url = await freshDatabase();
  a = await gateway(url);
  b = await gateway(url, { POLLER_ENABLED: 'false' });
  db = new Database(url, 2);
}, 60_000);

afterAll(async () => {
  await db?.close();
  await a?.close();
  await b?.close();
});

const changesOf = (version: string) => BigInt(version.split('.')[1]!);

test('answers read on two instances while the books change hold every change their stamp counts', async () => {
  const p = await projectWithKey(a, 'stamp-p');
  const q = await projectWithKey(a, 'stamp-q');
  const now = new Date();
  const from = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const to = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  const last = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1)).toISOString().slice(0, 7);
  const scope = { projectIds: [p.projectId, q.projectId], from, to };
  const query = `query($f: DateTime!, $t: DateTime!, $p: [ID!]) {
    spendReport(from: $f, to: $t, projectIds: $p, groupBy: ["project"], unit: USD) { keys totals { unit amount } } }`;
  const stamps: bigint[] = []; // after adjustment i, the stamp the test read
  const reads: Array<{ version: bigint; total: Decimal; before: number }> = [];
  let writing = true;
  let done = 0; // adjustments whose mutation had answered

  const reader = async (gw: Gateway) => {
    while (writing) {
      const before = done;
      const res = await http<{
        data: { spendReport: Array<{ keys: string[]; totals: Array<{ amount: string }> }> };
        extensions: { books: { versions: Record<string, string> } };
      }>(`${gw.url}/graphql`, {
        key: ADMIN,
        body: { query, variables: { f: from.toISOString(), t: to.toISOString(), p: scope.projectIds } },
      });
      expect(res.status).toBe(200);
      const row = res.body.data.spendReport.find((r) => r.keys[0] === 'stamp-p');
      reads.push({
        version: changesOf(res.body.extensions.books.versions.spendReport!),
        total: new Decimal(row?.totals[0]?.amount ?? 0),
        before,
      });
    }
  };
  const settler = async () => {
    while (writing)
      expect(
        (
          await submitChat(a, q.key, {
            model: 'gpt-5.6-luna',
            messages: [{ role: 'user', content: 'x' }],
            max_tokens: 8,
          })
        ).status,
      ).toBe(200);
  };
  const writer = async () => {
    for (let i = 0; i < 20; i++) {
      const amount = new Decimal(2).pow(i).div(1000).toFixed();
      const res = await graphql(
        b,
        ADMIN,
        `
          mutation ($p: ID!, $a: Decimal!) {
            adjustLedger(projectId: $p, unit: USD, amount: $a, reason: "stamp")
          }
        `,
        {
          p: p.projectId,
          a: amount,
        },
      );
      expect(res.body.errors).toBeUndefined();
      done++;
      stamps.push(changesOf((await readStamp(db, scope)).version));
      if (i === 6) {
        const closed = await graphql(
          a,
          ADMIN,
          `
            mutation ($m: String!) {
              closeMonth(month: $m) {
                month
              }
            }
          `,
          { m: last },
        );
        expect(closed.body.errors).toBeUndefined();
      }
      if (i === 13) {
        const reopened = await graphql(
          b,
          ADMIN,
          `
            mutation ($m: String!) {
              reopenMonth(month: $m, reason: "stamp test")
            }
          `,
          { m: last },
        );
        expect(reopened.body.errors).toBeUndefined();
      }
      await new Promise((r) => setTimeout(r, 40));
    }
    writing = false;
  };
  await Promise.all([writer(), settler(), reader(a), reader(a), reader(b), reader(b)]);

  expect(reads.length).toBeGreaterThan(40);
  for (const read of reads) {
    // Which adjustments the total holds: a prefix 0..k-1 of them, nothing else.
    const bits = read.total.times(1000);
    expect(bits.isInteger()).toBe(true);
    const held = BigInt(bits.toFixed());
    const k = held.toString(2).replace(/^0$/, '').length;
    expect(held).toBe((1n << BigInt(k)) - 1n);
    // Every adjustment counted in the stamp the answer claims is held.
    const claimed = stamps.filter((s) => s <= read.version).length;
    expect(k).toBeGreaterThanOrEqual(claimed);
    // And every adjustment that had answered before the read was sent, on either instance.
    expect(k).toBeGreaterThanOrEqual(read.before);
  }
}, 120_000);
