/**
 * What must hold after every operation, against the model and between the product's own views:
 * every budget's spent and held; each project's month in spendReport, and the drill-down's
 * taskTotals over the same posted range; each task's net; the vendor's open differences, and their
 * tasks under review; each project's month and closed statement converted to USD, EUR and JPY at the
 * rates in force, naming their versions (§19, conversion-invariants.ts); the FOCUS export's month
 * and its unit prices (§19); a closed month unchanged byte for byte (a commitment's true-up in it);
 * each limit's tasks in flight (§20); the books as metrics (metrics-invariants.ts); reconcile clean.
 * At the end also `ledger verify` and `audit verify`.
 */
import { Decimal } from 'decimal.js';
import { AuditService } from '../../src/audit/audit.service.js';
import { verifyChain } from '../../src/audit/audit-chain.js';
import { LedgerSealer } from '../../src/ledger/ledger-sealer.js';
import { verifyLedger } from '../../src/closing/ledger-verify.js';
import { archivedEntriesLoader } from '../../src/history/archived-entries.js';
import { reconcile } from '../../src/ledger/reconcile.js';
import { FOCUS_COLUMNS, focusRows } from '../../src/reports/focus-export.js';
import type { Env } from './commands.js';
import { conversionProblems } from './conversion-invariants.js';
import { limitProblems } from './limit-commands.js';
import { metricsProblems } from './metrics-invariants.js';
import { amountDisagreement, gql, monthRange, type Real } from './real.js';

export async function checkInvariants(env: Env, real: Real): Promise<void> {
  const m = env.model;
  const db = real.sys.gateways[0]!.db;
  const problems: string[] = [];
  const same = (what: string, actual: string | Decimal | null | undefined, expected: Decimal | null) => {
    const problem = amountDisagreement(what, actual, expected);
    if (problem) problems.push(problem);
  };

  // Budgets.
  for (const project of real.sys.projects) {
    const res = await gql(
      real,
      `query($p: ID!) { budgetStatus(projectId: $p) { budgetId spent held users(first: 10) { edges { node { user spent held } } } } }`,
      { p: project.id },
      1,
    );
    const rows = (res.data?.budgetStatus ?? []) as Array<{
      budgetId: string;
      spent: string;
      held: string;
      users: { edges: Array<{ node: { user: string; spent: string; held: string } }> };
    }>;
    for (const b of [...m.budgets.values()].filter((x) => x.project === project.id)) {
      const row = rows.find((r) => r.budgetId === b.id);
      const named = `${b.period} ${b.scope}${b.value ? ` ${b.value}` : ''}${b.part ? ` (${b.part.value} only)` : ''}`;
      if (!row) problems.push(`budget ${b.id} (${named}) is missing from budgetStatus`);
      if (b.scope === 'EACH_USER') {
        // Each end user's own balance; a user the product does not list has none.
        for (const user of ['u1', 'u2']) {
          const mine = row?.users.edges.find((e) => e.node.user === user)?.node;
          const { spent, held } = m.balance(b, user);
          same(`budget ${named} of ${project.name}, ${user}: spent`, mine?.spent ?? '0', spent);
          same(`budget ${named} of ${project.name}, ${user}: held`, mine?.held ?? '0', held);
        }
        continue;
      }
      const { spent, held } = m.balance(b);
      same(`budget ${named} of ${project.name}: spent`, row?.spent, spent);
      same(`budget ${named} of ${project.name}: held`, row?.held, held);
    }
  }

  // Each project's month: the report, and its drill-down over the same posted range.
  for (const project of [...real.sys.projects, { id: real.sys.past.id, name: 'past' }]) {
    for (const month of m.months) {
      const [from, to] = monthRange(month);
      // An archived month's tasks are in its files: its drill-down is refused, saying so (§18).
      const archived = m.archived.has(month);
      const drillDown = `d: taskTotals(filter: { projectIds: $p, postedFrom: $f, postedTo: $t }) { tasks totals { unit amount } withoutTask { unit amount } }`;
      const res = await gql(
        real,
        `query($f: DateTime!, $t: DateTime!, $p: [ID!]) {
        r: spendReport(from: $f, to: $t, projectIds: $p, groupBy: ["project"]) { tasks totals { unit amount } }
        ${archived ? '' : drillDown} }`,
        { f: from, t: to, p: [project.id] },
      );
      if (res.errors) problems.push(`reading ${project.name} ${month}: ${JSON.stringify(res.errors)}`);
      if (archived) {
        const refused = await gql(real, `query($f: DateTime!, $t: DateTime!, $p: [ID!]) { ${drillDown} }`, {
          f: from,
          t: to,
          p: [project.id],
        });
        const e = refused.errors?.[0];
        if (e?.extensions?.status !== 409 || !e.message.includes(`holds ${month}, which is archived`))
          problems.push(
            `${project.name} ${month} is archived: its drill-down must say so (409): ${JSON.stringify(refused)}`,
          );
      }
      const report = (res.data?.r ?? []) as Array<{ tasks: number; totals: Array<{ unit: string; amount: string }> }>;
      // The same report on the other instance: both answer from their own cached answers (decisions §22).
      const other = await gql(
        real,
        `query($f: DateTime!, $t: DateTime!, $p: [ID!]) {
        r: spendReport(from: $f, to: $t, projectIds: $p, groupBy: ["project"]) { tasks totals { unit amount } } }`,
        { f: from, t: to, p: [project.id] },
        1,
      );
      if (JSON.stringify(other.data?.r) !== JSON.stringify(res.data?.r))
        problems.push(
          `${project.name} ${month}: spendReport on the other instance ${JSON.stringify(other.data?.r)}, on the first ${JSON.stringify(res.data?.r)}`,
        );
      const drill = res.data?.d as
        | {
            tasks: number;
            totals: Array<{ unit: string; amount: string }>;
            withoutTask: Array<{ unit: string; amount: string }>;
          }
        | undefined;
      const expected = m.reported(project.id, month);
      for (const unit of ['USD', 'CREDITS'] as const) {
        const drilled = new Decimal(drill?.totals.find((t) => t.unit === unit)?.amount ?? 0).plus(
          drill?.withoutTask.find((t) => t.unit === unit)?.amount ?? 0,
        );
        same(
          `spendReport ${project.name} ${month} ${unit}`,
          report[0]?.totals.find((t) => t.unit === unit)?.amount ?? '0',
          expected.get(unit) ?? new Decimal(0),
        );
        if (archived) continue;
        same(
          `taskTotals (posted, tasks and adjustments with no task) ${project.name} ${month} ${unit}`,
          drilled,
          expected.get(unit) ?? new Decimal(0),
        );
      }
      if (!archived && (report[0]?.tasks ?? 0) !== (drill?.tasks ?? 0))
        problems.push(
          `${project.name} ${month}: spendReport counts ${report[0]?.tasks ?? 0} tasks, its drill-down ${drill?.tasks ?? 0}`,
        );
    }
  }

  // The FOCUS export (§19): each project's month adds up to the report, and a SKU row's unit
  // prices times its pricing quantity are its list and contracted costs.
  for (const month of m.months) {
    const [from, to] = monthRange(month);
    const rows = await focusRows(db, { from: new Date(from), to: new Date(to), vendorName: 'vendor' });
    const at = (name: string) => FOCUS_COLUMNS.indexOf(name as (typeof FOCUS_COLUMNS)[number]);
    const sums = new Map<string, Decimal>();
    for (const r of rows) {
      // Its periods are whole UTC days and months (§16: not the server's or the process's zone).
      const start = r[at('ChargePeriodStart')]!;
      const period = [start, r[at('ChargePeriodEnd')], r[at('BillingPeriodStart')], r[at('BillingPeriodEnd')]];
      const dayStart = Date.parse(start);
      if (
        !/T00:00:00(\.000)?Z$/.test(start) ||
        dayStart < Date.parse(from) ||
        dayStart >= Date.parse(to) ||
        Date.parse(period[1]!) !== dayStart + 86_400_000 ||
        Date.parse(period[2]!) !== Date.parse(from) ||
        Date.parse(period[3]!) !== Date.parse(to)
      )
        problems.push(`FOCUS ${month}: a row's periods are not a UTC day of the month: ${period.join(' ')}`);
      const unit = r[at('x_Unit')]!;
      const amount = unit === 'CREDITS' ? r[at('x_Credits')]! : r[at('BilledCost')]!;
      const key = `${r[at('SubAccountId')]}|${unit}`;
      sums.set(key, (sums.get(key) ?? new Decimal(0)).plus(amount));
      if (r[at('ChargeCategory')] !== 'Usage' || unit !== 'USD') continue;
      const q = new Decimal(r[at('PricingQuantity')]!);
      same(`FOCUS ${r[at('SkuPriceId')]} ListCost`, r[at('ListCost')], q.times(r[at('ListUnitPrice')]!));
      same(
        `FOCUS ${r[at('SkuPriceId')]} ContractedCost`,
        r[at('ContractedCost')],
        q.times(r[at('ContractedUnitPrice')]!),
      );
    }
    for (const project of [...real.sys.projects, { id: real.sys.past.id, name: 'past' }])
      for (const unit of ['USD', 'CREDITS'] as const)
        same(
          `FOCUS ${project.name} ${month} ${unit}`,
          sums.get(`${project.id}|${unit}`) ?? '0',
          m.reported(project.id, month).get(unit) ?? new Decimal(0),
        );
  }

  // Each task's net; the vendor's open differences; their tasks under review.
  const refs = m.tasks.map((t) => t.ref);
  for (let i = 0; i < refs.length; i += 50) {
    const chunk = m.tasks.slice(i, i + 50);
    const fields = chunk.map((t, j) => `t${j}: task(taskId: "${t.ref}") { net needsReview }`).join('\n');
    const res = await gql(real, `{ ${fields} }`);
    chunk.forEach((t, j) => {
      const seen = (res.data?.[`t${j}`] ?? null) as { net: string | null; needsReview: boolean } | null;
      const refused = res.errors?.find((e) => e.path?.[0] === `t${j}`);
      if (m.gone.has(t)) {
        // Archived with its month: a look-up says which month to restore (§18).
        if (seen || refused?.extensions?.status !== 404 || !refused.message.includes(`accepted in ${m.older}`))
          problems.push(`task ${t.ref} is archived: its look-up must say so (404): ${JSON.stringify(refused ?? seen)}`);
        return;
      }
      if (!seen) return void problems.push(`task ${t.ref} is not found: ${JSON.stringify(refused)}`);
      same(`task ${t.ref} net`, seen.net, m.net(t));
      const openItem = m.statements.namesOpenDifference(t);
      if (openItem && !seen.needsReview)
        problems.push(`task ${t.ref}: an open vendor difference names it, but it is not under review`);
      if (m.underReview(t) && !seen.needsReview)
        problems.push(
          `task ${t.ref} (${t.state}${t.review ? ', overrun or at its estimate' : ''}) awaits an operator, but it is not under review`,
        );
      if (seen.needsReview && !m.underReview(t) && !openItem)
        problems.push(
          `task ${t.ref} (${t.state}${t.resolved ? ', resolved' : ''}) is under review for no reason the model knows`,
        );
    });
  }
  const open = await gql(
    real,
    `{ vendorReconciliations(first: 100) { edges { node { id } } } archivedMonths { month } }`,
  );
  // The archived months, as `archive list` and the console list them (§18).
  const listed = ((open.data?.archivedMonths ?? []) as Array<{ month: string }>).map((a) => a.month);
  if (JSON.stringify(listed) !== JSON.stringify([...m.archived]))
    problems.push(`archivedMonths lists ${JSON.stringify(listed)}, the model ${JSON.stringify([...m.archived])}`);
  const ids = (
    (open.data?.vendorReconciliations as { edges: Array<{ node: { id: string } }> } | undefined)?.edges ?? []
  ).map((e) => e.node.id);
  const seenOpen: string[] = [];
  for (const id of ids) {
    const items = await gql(
      real,
      `query($r: ID!) { vendorDifferences(reconciliationId: $r, state: "open", first: 500) { edges { node { class vendorTaskId } } } }`,
      { r: id },
    );
    for (const e of (
      items.data?.vendorDifferences as { edges: Array<{ node: { class: string; vendorTaskId: string } }> }
    ).edges)
      seenOpen.push(`${e.node.class}:${e.node.vendorTaskId}`);
  }
  const modelOpen = m.statements.items.filter((i) => i.state === 'open').map((i) => `${i.class}:${i.vendorTaskId}`);
  if (JSON.stringify(seenOpen.sort()) !== JSON.stringify(modelOpen.sort()))
    problems.push(
      `open vendor differences: the product has ${JSON.stringify(seenOpen)}, the model ${JSON.stringify(modelOpen)}`,
    );

  // Converted figures, statements' too (§19).
  problems.push(...(await conversionProblems(env, real)));

  // Tasks in flight under each limit (§20).
  problems.push(...(await limitProblems(env, real)));

  // The books as metrics (§21), scraped from the second instance.
  problems.push(...(await metricsProblems(env, real, 1)));

  // A closed month never changes.
  for (const [month, figures] of env.frozen)
    if ((await real.figures(month)) !== figures) problems.push(`closed month ${month} changed`);

  // A refusal writes nothing: the task rows are the model's tasks, no more (§5), and a row for each
  // submission the vendor refused after it was admitted (rejected, §4).
  const [{ n, rejected }] = (
    await db.query<{ n: number; rejected: number }>(
      `SELECT count(*) FILTER (WHERE status <> 'rejected')::int AS n, count(*) FILTER (WHERE status = 'rejected')::int AS rejected FROM task`,
    )
  ).rows as [{ n: number; rejected: number }];
  const held = m.tasks.length - m.gone.size; // an archived month's tasks are in its files
  if (n !== held)
    problems.push(`the database holds ${n} tasks, the model ${held}: a refusal wrote a row, or a task was lost`);
  if (rejected !== env.refused)
    problems.push(`the database holds ${rejected} rejected tasks, the vendor refused ${env.refused}`);

  const differences = await reconcile(db);
  if (differences.length) problems.push(`reconcile: ${JSON.stringify(differences.slice(0, 5))}`);
  if (problems.length) throw new Error(`disagreements:\n  ${problems.join('\n  ')}`);
}

/** At the end of a sequence: the ledger's seals and the audit chain verify. */
export async function checkAtEnd(real: Real): Promise<void> {
  const db = real.sys.gateways[0]!.db;
  await new LedgerSealer(db).sealAll();
  // Archived months' entries are read from their files (§18), as `spendgate ledger verify` does.
  const ledger = await verifyLedger(db, undefined, archivedEntriesLoader(real.sys.archiveDir));
  if (ledger.problems.length) throw new Error(`ledger verify: ${ledger.problems.join('; ')}`);
  const audit = await verifyChain(new AuditService(db).all());
  if (audit.problem) throw new Error(`audit verify: record ${audit.problem.seq}: ${audit.problem.problem}`);
}
