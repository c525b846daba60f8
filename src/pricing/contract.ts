/**
 * Contract terms (decisions §19): what the organisation pays instead of the list price. Plain
 * TypeScript: a price-book version carries its contract (price-book.ts), so a task priced by a
 * version is priced by that version's terms too, and a contract published later never reaches it.
 *
 * A term is either
 * - a discount: a percentage off the list rate of every line of a model, a family or a kind; or
 * - a net rate: the rate of one line component of one model (`output`, `images:2K`,
 *   `video_seconds:720p`, `request:15s`), optionally of one tier only.
 * For each line the most specific term applies: the model's net rate for the line's component
 * (its tier's, then one for every tier), else the model's discount, the family's, the kind's;
 * no term leaves the list rate. The tier is chosen by the list price's rule (GPT-5.6's 272K) before
 * any term applies. Amounts stay exact: quantity × contracted rate ÷ per, never rounded.
 */
import type { Family, Kind } from '../catalog/catalog.types.js';
import { Money, type Decimal } from './money.js';
import type { Charge, ChargeLine, Unit } from './pricing.types.js';

export type ContractScope = 'model' | 'family' | 'kind';

export interface ContractTerm {
  scope: ContractScope;
  /** The model id, family or kind the term covers. */
  value: string;
  unit: Unit;
  /** A discount: percent off the list rate, 0 to 100. */
  discountPercent?: Decimal;
  /** A net rate (scope `model` only): the line component it prices, its tier (none: every tier), the rate. */
  component?: string;
  tier?: string | null;
  netRate?: Decimal;
}

/** The model a charge is for, as the contract's scopes see it. */
export interface ContractSubject {
  /** The model id. */
  id: string;
  family: Family;
  kind: Kind;
}

const HUNDRED = 100;

/** The term that sets a line's rate, or none (list price). */
export function termFor(
  terms: readonly ContractTerm[],
  subject: ContractSubject,
  unit: Unit,
  component: string,
  tier: string | undefined,
): ContractTerm | undefined {
  const ofUnit = terms.filter((t) => t.unit === unit);
  const net = (t: ContractTerm) =>
    t.scope === 'model' && t.value === subject.id && t.netRate !== undefined && t.component === component;
  return (
    ofUnit.find((t) => net(t) && t.tier != null && t.tier === tier) ??
    ofUnit.find((t) => net(t) && t.tier == null) ??
    ofUnit.find((t) => t.discountPercent !== undefined && t.scope === 'model' && t.value === subject.id) ??
    ofUnit.find((t) => t.discountPercent !== undefined && t.scope === 'family' && t.value === subject.family) ??
    ofUnit.find((t) => t.discountPercent !== undefined && t.scope === 'kind' && t.value === subject.kind)
  );
}

/** The contracted rate of a line under a term. */
export function contractedRate(term: ContractTerm, listRate: Decimal): Decimal {
  if (term.netRate !== undefined) return term.netRate;
  return listRate.times(term.discountPercent!.negated().plus(HUNDRED)).dividedBy(HUNDRED);
}

/**
 * The charge as owed under the contract: each line's rate and amount contracted, its list rate and
 * amount kept beside them (`listRate`, `listAmount`), and the charge's `listAmount`. Without terms
 * that touch it the charge comes back as it was (no list fields: list and contracted are equal).
 */
export function underContract<C extends Charge>(
  charge: C,
  subject: ContractSubject,
  terms: readonly ContractTerm[],
): C {
  if (terms.length === 0 || charge.lines.length === 0) return charge;
  let touched = false;
  const lines: ChargeLine[] = charge.lines.map((line) => {
    const term = termFor(terms, subject, charge.unit, line.component, charge.tier);
    if (!term) return line;
    touched = true;
    const rate = contractedRate(term, line.rate);
    return {
      ...line,
      rate,
      amount: line.quantity.times(rate).dividedBy(line.per),
      listRate: line.rate,
      listAmount: line.amount,
    };
  });
  if (!touched) return charge;
  const total = (pick: (l: ChargeLine) => Decimal) =>
    Money.total(
      charge.unit,
      lines.map((l) => Money.of(charge.unit, pick(l))),
    ).amount;
  return { ...charge, lines, amount: total((l) => l.amount), listAmount: charge.amount };
}

/** A charge's list amount: its own when a contract changed it, else the amount itself. */
export function listAmountOf(charge: Pick<Charge, 'amount' | 'listAmount'>): Decimal {
  return charge.listAmount ?? charge.amount;
}

/** The charge line component a price-book rate prices (engine.ts names lines so). */
export function lineComponentOf(component: string, key: string): string {
  if (component === 'token') return key;
  if (component === 'image') return `images:${key}`;
  if (component === 'second') return `video_seconds:${key}`;
  return `request:${key}s`;
}

/** A list rate as the contract prices it (the list rate itself when no term covers it). */
export function contractedRateOf(
  terms: readonly ContractTerm[],
  subject: ContractSubject,
  unit: Unit,
  rate: { component: string; key: string; tier?: string | null; rate: Decimal },
): Decimal {
  const tier = rate.component === 'token' ? (rate.tier ?? 'standard') : undefined;
  const term = termFor(terms, subject, unit, lineComponentOf(rate.component, rate.key), tier);
  return term ? contractedRate(term, rate.rate) : rate.rate;
}
