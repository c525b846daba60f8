/**
 * Converted figures against the model (decisions §19): each project's month in USD, EUR and JPY
 * through convertedSpend, and a closed month's statement, its exact totals and the same conversions. Each is
 * exact, null while a rate it needs is missing, and names the versions in force for its month.
 */
import { Decimal } from 'decimal.js';
import type { Env } from './commands.js';
import { CURRENCIES, type Converted } from './rates-model.js';
import { amountDisagreement, gql, monthRange, type Real } from './real.js';

interface Seen {
  amount: string | null;
  creditPriceVersions: number[];
  fxRateVersions: number[];
}

const FIELDS = 'amount creditPriceVersions fxRateVersions';

export async function conversionProblems(env: Env, real: Real): Promise<string[]> {
  const m = env.model;
  const problems: string[] = [];
  const same = (what: string, actual: string | null | undefined, expected: Decimal | null) => {
    const problem = amountDisagreement(what, actual, expected);
    if (problem) problems.push(problem);
  };
  const compare = (what: string, seen: Seen | null | undefined, expected: Converted, versions: boolean) => {
    same(what, seen?.amount, expected.amount);
    if (!versions) return;
    const named = JSON.stringify([seen?.creditPriceVersions, seen?.fxRateVersions]);
    const owed = JSON.stringify([expected.creditPriceVersions, expected.fxRateVersions]);
    if (named !== owed) problems.push(`${what}: names versions ${named} (credit price, FX), the model ${owed}`);
  };

  // One request for every project and month: the check runs after every step.
  const pairs = [...real.sys.projects, { id: real.sys.past.id, name: 'past' }].flatMap((project) =>
    m.months.map((month) => ({ project, month, range: monthRange(month) })),
  );
  const spend = (i: number, from: string, to: string, projectId: string) =>
    CURRENCIES.map(
      (c) =>
        `${c.toLowerCase()}${i}: convertedSpend(from: "${from}", to: "${to}", projectIds: ["${projectId}"], currency: "${c}") { ${FIELDS} }`,
    ).join(' ');
  const converted = CURRENCIES.map((c) => `${c.toLowerCase()}: converted(currency: "${c}") { ${FIELDS} }`).join(' ');
  const res = await gql(
    real,
    `{ ${pairs
      .map(
        ({ project, month, range: [from, to] }, i) => `
      ${spend(i, from, to, project.id)}
      s${i}: statement(projectId: "${project.id}", month: "${month}") { totals { unit amount } ${converted} }`,
      )
      .join('')} }`,
  );
  if (res.errors) return [`converted figures: ${JSON.stringify(res.errors)}`];
  for (const [i, { project, month }] of pairs.entries()) {
    const totals = m.reported(project.id, month);
    // A report names the versions of the months it has rows in: known here when some unit is not 0.
    const someSpend = [...totals.values()].some((t) => !t.isZero());
    for (const c of CURRENCIES)
      compare(
        `convertedSpend ${c} ${project.name} ${month}`,
        res.data?.[`${c.toLowerCase()}${i}`] as Seen,
        m.converted(project.id, month, c),
        someSpend,
      );
    const statement = res.data?.[`s${i}`] as
      ({ totals: Array<{ unit: string; amount: string }> } & Record<string, Seen>) | null;
    if (!m.closed.has(month)) {
      if (statement) problems.push(`${project.name} ${month} is open, and a statement of it is read`);
      continue;
    }
    if (!statement) {
      if (someSpend) problems.push(`${project.name} ${month} is closed with spend, and has no statement`);
      continue;
    }
    // The statement's month: its totals as the month posted them, converted at the rates it closed with.
    for (const unit of ['USD', 'CREDITS'] as const)
      same(
        `statement ${project.name} ${month} ${unit}`,
        statement.totals.find((t) => t.unit === unit)?.amount ?? '0',
        totals.get(unit) ?? new Decimal(0),
      );
    for (const c of CURRENCIES)
      compare(
        `statement ${project.name} ${month} converted to ${c}`,
        statement[c.toLowerCase()],
        m.converted(project.id, month, c),
        true,
      );
  }
  return problems;
}
