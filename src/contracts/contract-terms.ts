/**
 * What a published contract may say (decisions §19), checked before anything is written: each
 * problem is a 400 naming the term. Plain TypeScript over the catalog and the price book in force.
 */
import { findRoute } from '../catalog/catalog.js';
import { MODEL_ROUTES } from '../catalog/models.js';
import { ApiError } from '../common/api-error.js';
import { boundedAmount } from '../pricing/bounds.js';
import type { ContractScope, ContractTerm } from '../pricing/contract.js';
import { unitOf } from '../pricing/engine.js';
import type { ModelPrice, PriceBook } from '../pricing/price-book.js';
import { TOKEN_CLASSES, type Unit } from '../pricing/pricing.types.js';

/** A contract longer than this is a mistake, not a negotiation. */
export const MAX_CONTRACT_TERMS = 500;
const SCOPES: readonly ContractScope[] = ['model', 'family', 'kind'];
const KIND_UNITS: Record<string, Unit> = { chat: 'CREDITS', video: 'USD', image: 'USD' };

export interface ContractTermText {
  scope: string;
  value: string;
  unit: Unit;
  discountPercent?: string | null;
  component?: string | null;
  tier?: string | null;
  netRate?: string | null;
}

/** The terms as the engine takes them, or a 400 naming the first bad one. */
export function checkContract(terms: readonly ContractTermText[], book: PriceBook): ContractTerm[] {
  if (terms.length > MAX_CONTRACT_TERMS)
    throw ApiError.badRequest(`terms: at most ${MAX_CONTRACT_TERMS} terms in one contract`);
  const seen = new Set<string>();
  return terms.map((t, i) => {
    const at = `terms[${i}]`;
    const term = checkTerm(at, t, book);
    const key = [term.unit, term.scope, term.value, term.component ?? '', term.tier ?? ''].join('|');
    if (seen.has(key)) throw ApiError.badRequest(`${at}: the contract already has a term for this ${term.scope}`);
    seen.add(key);
    return term;
  });
}

function checkTerm(at: string, t: ContractTermText, book: PriceBook): ContractTerm {
  const scope = t.scope as ContractScope;
  if (!SCOPES.includes(scope)) throw ApiError.badRequest(`${at}.scope: must be model, family or kind`);
  const unit = unitOfScope(at, scope, t.value);
  if (t.unit !== unit) throw ApiError.badRequest(`${at}.unit: ${t.value} is priced in ${unit}`);
  const discount = t.discountPercent ?? null;
  const net = t.netRate ?? null;
  if ((discount === null) === (net === null))
    throw ApiError.badRequest(`${at}: give either discountPercent or netRate`);
  if (discount !== null) {
    if (t.component != null || t.tier != null)
      throw ApiError.badRequest(`${at}: a discount covers every line; component and tier are for a net rate`);
    const percent = boundedAmount(`${at}.discountPercent`, discount, { negative: false });
    if (percent.greaterThan(100)) throw ApiError.badRequest(`${at}.discountPercent: must be at most 100`);
    return { scope, value: t.value, unit, discountPercent: percent };
  }
  if (scope !== 'model') throw ApiError.badRequest(`${at}.netRate: a net rate is of one model (scope model)`);
  const component = t.component ?? '';
  const price = book.models.get(t.value);
  if (!price) throw ApiError.badRequest(`${at}.value: ${t.value} has no list price to net against`);
  const tier = t.tier ?? null;
  lineProblem(at, price, component, tier);
  return {
    scope,
    value: t.value,
    unit,
    component,
    tier,
    netRate: boundedAmount(`${at}.netRate`, net!, { negative: false }),
  };
}

function unitOfScope(at: string, scope: ContractScope, value: string): Unit {
  if (scope === 'model') {
    const route = findRoute(value);
    if (!route) throw ApiError.badRequest(`${at}.value: "${value.slice(0, 60)}" is not a model of the catalog`);
    return unitOf(route);
  }
  if (scope === 'kind') {
    const unit = KIND_UNITS[value];
    if (!unit) throw ApiError.badRequest(`${at}.value: a kind is chat, video or image`);
    return unit;
  }
  const route = MODEL_ROUTES.find((r) => r.family === value);
  if (!route) throw ApiError.badRequest(`${at}.value: "${value.slice(0, 60)}" is not a model family of the catalog`);
  return unitOf(route);
}

/** The component names a charge line of this model can have (engine.ts), and its tiers. */
function lineProblem(at: string, price: ModelPrice, component: string, tier: string | null): void {
  const tokens = price.tiers.length > 0;
  const names = tokens
    ? TOKEN_CLASSES.filter((c) => price.tiers.some((t) => t.rates[c] !== undefined))
    : [
        ...[...price.perImage.keys()].map((k) => `images:${k}`),
        ...[...price.perSecond.keys()].map((k) => `video_seconds:${k}`),
        ...[...price.perRequest.keys()].map((k) => `request:${k}s`),
      ];
  if (!names.includes(component))
    throw ApiError.badRequest(`${at}.component: must be one of ${[...names].sort().join(', ')}`);
  if (tier === null) return;
  if (!tokens || !price.tiers.some((t) => t.name === tier))
    throw ApiError.badRequest(
      `${at}.tier: ${tokens ? `must be one of ${price.tiers.map((t) => t.name).join(', ')}` : 'only token rates have tiers'}`,
    );
}
