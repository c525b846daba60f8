/**
 * The vendor's statements through the tester (decisions §14): statements of settled tasks (each
 * at its net or a cent off, in its own unit, maybe a line not ours), re-bills of an earlier line,
 * hostile mappings, a statement of a day of the month before last (refused once that month is
 * archived), and finance's accepts and disputes. A re-send of the same file is the same statement.
 */
import { Decimal } from 'decimal.js';
import { expectEqual, pickOf, type Cmd, type Env } from './commands.js';
import type { Item, StatementLine } from './statements-model.js';
import { today } from './catalog-model.js';
import { inFlight } from './limits-model.js';
import { call, expectStatus, gql, type Real } from './real.js';

/**
 * Where in today's UTC day a statement's lines fall: its first minute, and two times when the
 * model's server (Chatham, +13:45) is already in tomorrow, the last near midnight, so that a day
 * taken in either side's zone instead of UTC's (§16) splits the statement's days at any hour a run
 * starts. Three, so that the same statement is often sent again.
 */
export const LINE_MINUTES = [0, 11 * 60 + 15, 23 * 60 + 40];

/**
 * A vendor statement of some settled tasks (each at its net, or off by a cent), maybe one not ours; a re-send is the
 * same file.
 */
export class ImportStatement implements Cmd {
  constructor(
    readonly picks: number[],
    readonly deltas: number[],
    readonly foreign: boolean,
    /** minutes into today's UTC day (one of LINE_MINUTES) */
    readonly minute: number,
  ) {}
  check = (env: Readonly<Env>) => env.model.tasks.some((t) => /^\d+$/.test(t.ref));
  async run(env: Env, real: Real) {
    const m = env.model;
    const ours = m.tasks.filter((t) => /^\d+$/.test(t.ref));
    const chosen = [...new Set(this.picks.map((i) => pickOf(ours, i)))];
    const at = new Date(Date.parse(`${today()}T00:00:00Z`) + this.minute * 60_000).toISOString().replace('.000', '');
    const lines = chosen.map((t, i) => ({
      vendorTaskId: t.ref,
      at,
      amount: (m.net(t) ?? t.hold).plus(new Decimal(this.deltas[i % this.deltas.length]!).div(100)),
    }));
    if (this.foreign) lines.push({ vendorTaskId: '999999999', at, amount: new Decimal('0.04') });
    await sendStatement(env, real, 0, lines, String(this));
  }
  toString = () =>
    `statement(#${this.picks.join(',')}, ${this.deltas.join('/')}¢${this.foreign ? ', one not ours' : ''}, at minute ${this.minute})`;
}

/** A line of an earlier statement billed again, as a corrected re-send or a second month's file would (§14). */
export class Rebill implements Cmd {
  constructor(
    readonly pick: number,
    readonly cents: number,
  ) {}
  check = (env: Readonly<Env>) => env.model.statements.lines.some((l) => env.model.byRef(l.vendorTaskId));
  async run(env: Env, real: Real) {
    const m = env.model;
    const earlier = pickOf(
      m.statements.lines.filter((l) => m.byRef(l.vendorTaskId)),
      this.pick,
    );
    const at = new Date(Date.parse(earlier.at) + 60_000 * (1 + (m.statements.count % 50)))
      .toISOString()
      .replace('.000', '');
    const line = {
      vendorTaskId: earlier.vendorTaskId,
      at,
      amount: earlier.amount.plus(new Decimal(this.cents).div(100)),
    };
    await sendStatement(env, real, 1, [line], String(this));
  }
  toString = () => `rebill(#${this.pick}, ${this.cents >= 0 ? '+' : ''}${this.cents}¢)`;
}

/**
 * A statement of `lines` uploaded to instance `at` (each line in its task's unit: the vendor bills
 * credits for chat, USD for media): the same file again is the same statement (200); a new one is
 * imported (201) and names exactly the differences the model makes. Whether it was new.
 */
export async function sendStatement(
  env: Env,
  real: Real,
  at: number,
  lines: StatementLine[],
  what: string,
): Promise<boolean> {
  const m = env.model;
  const csv = statementCsv(env, lines);
  const res = await upload(real, at, csv);
  if (env.files.has(csv)) {
    expectStatus(res, 200, `${what}: the same file again`);
    return false;
  }
  expectStatus(res, 201, what);
  env.files.add(csv);
  m.statements.import(lines);
  await expectItems(env, real, (res.body as { id: string }).id, what);
  return true;
}

/** A statement's file as the vendor sends it. */
function statementCsv(env: Env, lines: StatementLine[]): string {
  const row = (l: StatementLine) =>
    `${l.vendorTaskId},seedream-4.0,${l.at},${l.amount.toFixed()},${env.model.byRef(l.vendorTaskId)?.unit ?? 'USD'}`;
  return `task_id,model,time,amount,unit\n${lines.map(row).join('\n')}\n`;
}

const upload = (real: Real, at: number, csv: string) =>
  call(real, at, 'POST', '/reports/vendor-statements', {
    key: real.admin,
    raw: csv,
    headers: { 'content-type': 'text/csv' },
  });

/**
 * A statement of a day of the month before last, billing a task not ours (§14 × §18): imported while
 * the month's tasks are in the database; once the month is archived, refused with 409 naming the month
 * and the way back (restore, import, archive again), nothing stored. The same file as one imported
 * before is that statement, archived or not.
 */
export class StatementOfArchivedMonth implements Cmd {
  constructor(readonly n: number) {}
  check = () => true;
  async run(env: Env, real: Real) {
    const m = env.model;
    const lines = [{ vendorTaskId: `99999990${this.n}`, at: `${m.older}-12T08:00:00Z`, amount: new Decimal('0.04') }];
    const csv = statementCsv(env, lines);
    if (!m.archived.has(m.older) || env.files.has(csv)) {
      await sendStatement(env, real, this.n % 2, lines, String(this));
      return;
    }
    const res = await upload(real, this.n % 2, csv);
    expectStatus(res, 409, String(this));
    const message = (res.body as { message?: string }).message ?? '';
    if (!message.includes(m.older) || !message.includes(`spendgate archive restore ${m.older}`))
      throw new Error(`${this}: the refusal must name ${m.older} and how to restore it: ${message}`);
  }
  toString = () => `statement-of-archived-month(#${this.n})`;
}

/** The statement just imported names exactly the differences the model made; each keeps its id. */
export async function expectItems(env: Env, real: Real, statementId: string, what: string): Promise<void> {
  const m = env.model;
  const items = await gql(
    real,
    `query($r: ID!) { vendorDifferences(reconciliationId: $r, first: 500) { edges { node { id class vendorTaskId } } } }`,
    { r: statementId },
  );
  const seen = (
    items.data as { vendorDifferences: { edges: Array<{ node: { id: string; class: string; vendorTaskId: string } }> } }
  ).vendorDifferences.edges.map((e) => e.node);
  const made = m.statements.items.filter((i) => i.statement === m.statements.count);
  expectEqual(
    seen.map((i) => `${i.class}:${i.vendorTaskId}`).sort(),
    made.map((i) => `${i.class}:${i.vendorTaskId}`).sort(),
    `${what}: the statement's differences`,
  );
  for (const i of made)
    (i as Item & { id?: string }).id = seen.find((x) => x.class === i.class && x.vendorTaskId === i.vendorTaskId)!.id;
}

/**
 * A task the vendor bills in a later file (§14): a statement of today bills one settled task, so
 * another of today's is ours, not billed; a second file bills that one (the vendor's next export,
 * or a re-send with the row it left out), which closes the item: taking it is then refused, and the
 * charge stands. Before, the item stayed open and taking it set the net to 0 though billed.
 */
export class BilledLater implements Cmd {
  constructor(
    readonly first: number,
    readonly second: number,
  ) {}
  private unbilled(env: Readonly<Env>) {
    const m = env.model;
    const billed = new Set(m.statements.lines.map((l) => l.vendorTaskId));
    return m.tasks.filter(
      (t) =>
        /^\d+$/.test(t.ref) &&
        t.acceptedDay === today() &&
        !inFlight(t) &&
        !(m.net(t) ?? new Decimal(0)).isZero() &&
        !billed.has(t.ref) &&
        !m.statements.items.some((i) => i.task === t && i.class === 'ours_not_billed'),
    );
  }
  check = (env: Readonly<Env>) => this.unbilled(env).length >= 2;
  async run(env: Env, real: Real) {
    const m = env.model;
    const tasks = this.unbilled(env);
    const a = pickOf(tasks, this.first);
    const b = pickOf(
      tasks.filter((t) => t !== a),
      this.second,
    );
    const at = (minute: number) => `${today()}T00:${String(minute).padStart(2, '0')}:00Z`;
    await sendStatement(env, real, 0, [{ vendorTaskId: a.ref, at: at(20), amount: m.net(a)! }], `${this}: the first`);
    const left = m.statements.items.find((i) => i.task === b && i.class === 'ours_not_billed') as Item & { id: string };
    if (!left) throw new Error(`${this}: the first file must list ${b.ref} as ours, not billed`);
    await sendStatement(env, real, 1, [{ vendorTaskId: b.ref, at: at(21), amount: m.net(b)! }], `${this}: the later`);
    const taken = await gql(real, `mutation($i: ID!) { acceptVendorDifference(id: $i) { state } }`, { i: left.id });
    if (taken.errors?.[0]?.extensions?.status !== 409)
      throw new Error(`${this}: the item its later file closed must not be taken again: ${JSON.stringify(taken)}`);
  }
  toString = () => `billed-later(#${this.first}, #${this.second})`;
}

/** A statement whose mapping scales amounts out of bounds: refused, nothing stored (§16). */
export class HostileStatement implements Cmd {
  constructor(readonly scale: string) {}
  check = () => true;
  async run(_env: Env, real: Real) {
    // 0.04 scaled by 10^-18 has 20 decimals; 999999999999 scaled by 10^12 has 24 digits before the point.
    const csv = `task_id,model,time,amount,unit\n1,seedream-4.0,2026-11-02T10:00:00Z,${this.scale.startsWith('0.') ? '0.04' : '999999999999'},USD\n`;
    const res = await call(
      real,
      1,
      'POST',
      `/reports/vendor-statements?mapping=${encodeURIComponent(JSON.stringify([{ field: 'amount', column: 'amount', scale: this.scale }]))}`,
      { key: real.admin, raw: csv, headers: { 'content-type': 'text/csv' } },
    );
    expectStatus(res, 400, String(this));
  }
  toString = () => `hostile-statement(scale ${this.scale})`;
}

/** Finance takes the vendor's figure, or disputes it. */
export class Decide implements Cmd {
  constructor(
    readonly pick: number,
    readonly accept: boolean,
  ) {}
  check = (env: Readonly<Env>) => env.model.statements.items.some((i) => i.state === 'open');
  async run(env: Env, real: Real) {
    const item = pickOf(
      env.model.statements.items.filter((i) => i.state === 'open'),
      this.pick,
    ) as Item & { id: string };
    const res = this.accept
      ? await gql(real, `mutation($i: ID!) { acceptVendorDifference(id: $i) { state } }`, { i: item.id })
      : await gql(real, `mutation($i: ID!) { disputeVendorDifference(id: $i, note: "model") { state } }`, {
          i: item.id,
        });
    if (this.accept && !env.model.statements.acceptable(item)) {
      if (res.errors?.[0]?.extensions?.status !== 409)
        throw new Error(`${this}: a pending item's task is still held: ${JSON.stringify(res)}`);
      return;
    }
    if (res.errors) throw new Error(`${this} (${item.class} ${item.vendorTaskId}): ${JSON.stringify(res.errors)}`);
    if (this.accept) env.model.statements.accept(item);
    else item.state = 'disputed';
  }
  toString = () => `${this.accept ? 'accept' : 'dispute'}(#${this.pick})`;
}
