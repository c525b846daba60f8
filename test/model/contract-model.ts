/**
 * A contract as the model reads decisions §19: terms that replace the list rate of a charge's
 * lines. A discount (percent off the list rate) covers every line of a model, a family or a kind; a
 * net rate is the rate of one line of one model (`images:2K`, `video_seconds:1080p`, `request:15s`,
 * `input`, `output`, `cache_write_5m`), of one token tier or of every tier. The most specific term
 * sets a line's rate: the model's net rate for the line (its tier's before every tier's), else the
 * model's discount, the family's, the kind's; a line no term covers keeps its list rate. A task
 * keeps the terms in force when it was accepted (its price-book version), however the contract
 * changes after.
 */
import { Decimal } from 'decimal.js';
import type { Unit } from './catalog-model.js';

export interface Term {
  scope: 'model' | 'family' | 'kind';
  value: string;
  unit: Unit;
  discountPercent?: string;
  /** a net rate's line and, for token rates, its tier (none: every tier) */
  component?: string;
  tier?: string;
  netRate?: string;
}

export type Contract = readonly Term[];

/** The rate a line is charged at under `contract`: `list` unless a term covers the line. */
export function rateUnder(
  contract: Contract,
  { model, family, kind }: { model: string; family: string; kind: string },
  line: string,
  tier: string | null,
  list: Decimal,
): Decimal {
  const net = (t: Term) => t.scope === 'model' && t.value === model && t.netRate !== undefined && t.component === line;
  const discount = (scope: Term['scope'], value: string) => (t: Term) =>
    t.discountPercent !== undefined && t.scope === scope && t.value === value;
  const term =
    contract.find((t) => net(t) && t.tier === tier) ??
    contract.find((t) => net(t) && t.tier === undefined) ??
    contract.find(discount('model', model)) ??
    contract.find(discount('family', family)) ??
    contract.find(discount('kind', kind));
  if (!term) return list;
  if (term.netRate !== undefined) return new Decimal(term.netRate);
  return list.times(new Decimal(100).minus(term.discountPercent!)).dividedBy(100);
}

/**
 * The terms a sequence's contracts are drawn from, a slot each (a contract takes some of them,
 * with one of the slot's figures): kinds, families and models, in USD and in credits, discounts and
 * net rates, so that a more specific term meets a broader one on the same line.
 */
export const TERM_SLOTS: ReadonlyArray<{
  term: Omit<Term, 'discountPercent' | 'netRate'>;
  figures: string[];
  net?: true;
}> = [
  { term: { scope: 'kind', value: 'image', unit: 'USD' }, figures: ['10', '22', '12.5', '33.33'] },
  { term: { scope: 'family', value: 'seedream', unit: 'USD' }, figures: ['5', '50'] },
  {
    term: { scope: 'model', value: 'seedream-4.0', unit: 'USD', component: 'images:2K' },
    figures: ['0.055', '0.0333'],
    net: true,
  },
  { term: { scope: 'model', value: 'nano-banana-pro', unit: 'USD' }, figures: ['100', '7.5'] },
  { term: { scope: 'family', value: 'sora', unit: 'USD' }, figures: ['15'] },
  { term: { scope: 'model', value: 'sora-2-pro', unit: 'USD', component: 'request:15s' }, figures: ['0.7'], net: true },
  {
    term: { scope: 'model', value: 'wan2.7-video', unit: 'USD', component: 'video_seconds:1080p' },
    figures: ['0.2'],
    net: true,
  },
  { term: { scope: 'kind', value: 'chat', unit: 'CREDITS' }, figures: ['20', '3.125'] },
  { term: { scope: 'family', value: 'gpt-5.6', unit: 'CREDITS' }, figures: ['10'] },
  { term: { scope: 'model', value: 'gpt-5.6-luna', unit: 'CREDITS', component: 'input' }, figures: ['100'], net: true },
  {
    term: { scope: 'model', value: 'gpt-5.6-luna', unit: 'CREDITS', component: 'output', tier: 'long' },
    figures: ['1000.5'],
    net: true,
  },
  {
    term: { scope: 'model', value: 'gpt-5.6-luna', unit: 'CREDITS', component: 'cache_write' },
    figures: ['150'],
    net: true,
  },
  {
    term: { scope: 'model', value: 'claude-sonnet-5', unit: 'CREDITS', component: 'output' },
    figures: ['7000'],
    net: true,
  },
  {
    term: { scope: 'model', value: 'claude-sonnet-5', unit: 'CREDITS', component: 'cache_write_5m' },
    figures: ['1500'],
    net: true,
  },
];

/** A slot's term with one of its figures. */
export function termOf(slot: number, figure: string): Term {
  const s = TERM_SLOTS[slot]!;
  return s.net ? { ...s.term, netRate: figure } : { ...s.term, discountPercent: figure };
}

/** A contract of the slots given a figure (null: the slot is not in it). */
export function contractOf(figures: ReadonlyArray<string | null> | null): Contract {
  return (figures ?? []).flatMap((figure, slot) => (figure === null ? [] : [termOf(slot, figure)]));
}

/** A contract in a line of text: `images -10%, gpt-5.6-luna output@long 1000.5`. */
export function describe(contract: Contract): string {
  if (contract.length === 0) return 'none';
  return contract
    .map((t) =>
      t.netRate !== undefined
        ? `${t.value} ${t.component}${t.tier ? `@${t.tier}` : ''} ${t.netRate}`
        : `${t.value} -${t.discountPercent}%`,
    )
    .join(', ');
}
