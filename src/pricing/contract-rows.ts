/**
 * contract_term rows (decisions §19): each price-book version carries the contract in force with it,
 * as it carries every rate, so the version a task was priced by names its terms too. Read and written
 * by PriceBookService, which owns the versions; the contracts room validates and publishes.
 */
import type { Database } from '../database/database.js';
import type { ContractScope, ContractTerm } from './contract.js';
import { dec } from './money.js';
import type { Unit } from './pricing.types.js';

type Db = { query: Database['query'] };

interface TermRow {
  version: number;
  unit: Unit;
  scope: ContractScope;
  value: string;
  discount_percent: string | null;
  component: string | null;
  tier: string | null;
  net_rate: string | null;
}

/** Every version's terms, by version, in a stable order. */
export async function loadContractTerms(db: Db): Promise<Map<number, ContractTerm[]>> {
  const { rows } = await db.query<TermRow>(
    `SELECT version, unit, scope, value, discount_percent::text AS discount_percent, component, tier, net_rate::text AS net_rate
     FROM contract_term ORDER BY version, unit, scope, value, component NULLS FIRST, tier NULLS FIRST`,
  );
  const byVersion = new Map<number, ContractTerm[]>();
  for (const r of rows) {
    const terms = byVersion.get(r.version) ?? [];
    terms.push(termOf(r));
    byVersion.set(r.version, terms);
  }
  return byVersion;
}

function termOf(r: TermRow): ContractTerm {
  const term: ContractTerm = { scope: r.scope, value: r.value, unit: r.unit };
  if (r.discount_percent !== null) term.discountPercent = dec(r.discount_percent);
  if (r.net_rate !== null) {
    term.netRate = dec(r.net_rate);
    term.component = r.component!;
    term.tier = r.tier;
  }
  return term;
}

/** A version's terms: those given (a contract published), or the previous version's carried over. */
export async function writeContractTerms(
  client: Db,
  version: number,
  previous: number,
  terms: readonly ContractTerm[] | undefined,
): Promise<void> {
  if (!terms) {
    await client.query(
      `INSERT INTO contract_term (version, unit, scope, value, discount_percent, component, tier, net_rate)
       SELECT $1, unit, scope, value, discount_percent, component, tier, net_rate FROM contract_term WHERE version = $2`,
      [version, previous],
    );
    return;
  }
  if (terms.length === 0) return;
  await client.query(
    `INSERT INTO contract_term (version, unit, scope, value, discount_percent, component, tier, net_rate)
     SELECT $1, t.unit::"Unit", t.scope, t.value, t."discountPercent"::numeric, t.component, t.tier, t."netRate"::numeric
     FROM jsonb_to_recordset($2::jsonb) AS t(unit text, scope text, value text, "discountPercent" text, component text, tier text, "netRate" text)`,
    [version, JSON.stringify(terms.map(termView))],
  );
}

/** A term as the API shows it: every figure an exact decimal string. */
export function termView(t: ContractTerm) {
  return {
    unit: t.unit,
    scope: t.scope,
    value: t.value,
    discountPercent: t.discountPercent?.toFixed() ?? null,
    component: t.component ?? null,
    tier: t.tier ?? null,
    netRate: t.netRate?.toFixed() ?? null,
  };
}
