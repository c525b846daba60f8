/**
 * The pricing engine: plain TypeScript and decimal.js, no Nest, no Prisma.
 *
 * - `quote(request, book)`: the figure at submission. EXACT for media (the request fixes it),
 *   ESTIMATE for chat (input estimate + max_tokens at output rates, at the tier the input implies),
 *   UNPRICED where no price is published.
 * - `price(task, usage, book)`: the final charge, one line per component.
 */
import { effectiveValue, findRoute } from '../catalog/catalog.js';
import { underContract } from './contract.js';
import type { ModelRoute } from '../catalog/catalog.types.js';
import { dec, MILLION, Money, ZERO, type Decimal } from './money.js';
import type { ModelPrice, PriceBook, TokenTier } from './price-book.js';
import type { Charge, ChargeLine, TokenClass, Unit } from './pricing.types.js';
import { TOKEN_CLASSES } from './pricing.types.js';
import { estimateInputTokens } from './token-estimate.js';
import { readUsage, type TokenCounts } from './usage.js';

/** Used for the hold when neither the request nor the spec gives max_tokens (4096 is every shown default). */
export const ASSUMED_MAX_TOKENS = 4096;

/** What the quote was computed from; stored with the task so settlement can re-derive it. */
export type PriceBasis =
  | {
      kind: 'chat';
      inputTokensEstimate: number;
      maxTokens: number;
      maxTokensSource: 'request' | 'route default' | 'assumed';
    }
  | { kind: 'video' | 'image'; resolution: string | null; duration: number | null; n: number | null };

export interface Quote extends Charge {
  basis: PriceBasis;
}

export interface PricingRequest {
  route: ModelRoute;
  body: Record<string, unknown>;
}

export interface PricedTask {
  model: string;
  unit: Unit;
  basis: PriceBasis;
}

const ONE = dec(1);

export function unitOf(route: ModelRoute): Unit {
  return route.kind === 'chat' ? 'CREDITS' : 'USD';
}

/** The figure at submission, at list prices and then under the version's contract (contract.ts). */
export function quote(request: PricingRequest, book: PriceBook): Quote {
  const { route } = request;
  const list = listQuote(request, book);
  return book.contract.length === 0 ? list : underContract(list, route, book.contract);
}

/** The final charge, at list prices and then under the contract of the task's own version. */
export function price(task: PricedTask, usage: unknown, book: PriceBook): Charge {
  const list = listPrice(task, usage, book);
  const route = book.contract.length === 0 ? undefined : findRoute(task.model);
  return route ? underContract(list, route, book.contract) : list;
}

function listQuote(request: PricingRequest, book: PriceBook): Quote {
  const { route, body } = request;
  const basis = basisOf(route, body);
  const model = book.models.get(route.id);
  if (!model)
    return unpriced(unitOf(route), basis, `${route.id} has no published price in price book v${book.version}`);
  return basis.kind === 'chat' ? chatEstimate(route.id, model, basis) : mediaPrice(route.id, model, basis);
}

function listPrice(task: PricedTask, usage: unknown, book: PriceBook): Charge {
  const model = book.models.get(task.model);
  if (!model)
    return unpriced(task.unit, task.basis, `${task.model} has no published price in price book v${book.version}`);
  if (task.basis.kind !== 'chat') return mediaPrice(task.model, model, task.basis);

  const reading = readUsage(usage);
  if (!reading.ok) {
    // Unknown or missing usage is never a zero: the estimate stands, flagged for review.
    const estimate = chatEstimate(task.model, model, task.basis);
    return {
      ...estimate,
      warnings: [...estimate.warnings, `${reading.reason}; charged at the estimate`],
      needsReview: true,
    };
  }
  const { tokens, promptTokens, warnings } = reading.usage;
  const tier = tierFor(model, promptTokens);
  return tokenCharge(task.model, tier, tokens, 'EXACT', [...warnings]);
}

function basisOf(route: ModelRoute, body: Record<string, unknown>): PriceBasis {
  if (route.kind === 'chat') {
    const given = body.max_tokens;
    const routeDefault = effectiveValue(route, {}, 'max_tokens');
    const [maxTokens, maxTokensSource] =
      typeof given === 'number'
        ? [given, 'request' as const]
        : typeof routeDefault === 'number'
          ? [routeDefault, 'route default' as const]
          : [ASSUMED_MAX_TOKENS, 'assumed' as const];
    return { kind: 'chat', inputTokensEstimate: estimateInputTokens(body.messages), maxTokens, maxTokensSource };
  }
  const value = (field: string) => effectiveValue(route, body, field);
  const resolution = value('resolution');
  const duration = value('duration');
  const n = route.fields.n ? value('n') : 1;
  return {
    kind: route.kind,
    resolution: typeof resolution === 'string' ? resolution : null,
    duration: typeof duration === 'number' ? duration : null,
    n: route.kind === 'image' ? (typeof n === 'number' ? n : 1) : null,
  };
}

function chatEstimate(modelId: string, model: ModelPrice, basis: Extract<PriceBasis, { kind: 'chat' }>): Quote {
  const tier = tierFor(model, basis.inputTokensEstimate);
  const tokens: TokenCounts = {
    input: basis.inputTokensEstimate,
    output: basis.maxTokens,
    cache_read: 0,
    cache_write_5m: 0,
    cache_write_1h: 0,
    cache_write: 0,
  };
  const warnings =
    basis.maxTokensSource === 'assumed'
      ? [`max_tokens not given and ${modelId} shows no default; the estimate assumes ${ASSUMED_MAX_TOKENS}`]
      : [];
  return { ...tokenCharge(modelId, tier, tokens, 'ESTIMATE', warnings), basis };
}

function tierFor(model: ModelPrice, promptTokens: number): TokenTier {
  const tier = model.tiers.find((t) => t.maxInputTokens === null || promptTokens <= t.maxInputTokens);
  if (!tier) throw new Error('price book has no token tier for this input size');
  return tier;
}

/** Cache writes without a rate of their own fall back to the route's other cache-write rate. */
const RATE_FALLBACK: Record<TokenClass, TokenClass[]> = {
  input: ['input'],
  output: ['output'],
  cache_read: ['cache_read'],
  cache_write_5m: ['cache_write_5m', 'cache_write'],
  cache_write_1h: ['cache_write_1h', 'cache_write'],
  cache_write: ['cache_write', 'cache_write_5m'],
};

function tokenCharge(
  modelId: string,
  tier: TokenTier,
  tokens: TokenCounts,
  exactness: 'EXACT' | 'ESTIMATE',
  warnings: string[],
): Charge {
  const lines: ChargeLine[] = [];
  let needsReview = false;
  for (const cls of TOKEN_CLASSES) {
    const quantity = tokens[cls];
    if (quantity === 0) continue;
    const rate = RATE_FALLBACK[cls].map((c) => tier.rates[c]).find((r) => r !== undefined);
    if (!rate) {
      warnings.push(`${quantity} ${cls} tokens reported but ${modelId} has no ${cls} rate; not charged`);
      needsReview = true;
      continue;
    }
    const q = dec(quantity);
    lines.push({ component: cls, quantity: q, rate, per: MILLION, amount: q.times(rate).dividedBy(MILLION) });
  }
  return {
    unit: 'CREDITS',
    exactness,
    amount: Money.total(
      'CREDITS',
      lines.map((l) => Money.of('CREDITS', l.amount)),
    ).amount,
    tier: tier.name,
    lines,
    warnings,
    needsReview,
  };
}

function mediaPrice(modelId: string, model: ModelPrice, basis: Exclude<PriceBasis, { kind: 'chat' }>): Quote {
  const { resolution, duration, n } = basis;
  const unit = model.unit;
  if (basis.kind === 'image') {
    if (!resolution) return unpriced(unit, basis, `${modelId}: resolution not given and no default is shown`);
    const rate = model.perImage.get(resolution);
    if (!rate) return unpriced(unit, basis, `${modelId} has no published price at ${resolution}`);
    return exactLine(unit, basis, `images:${resolution}`, dec(n ?? 1), rate);
  }
  if (model.perRequest.size > 0) {
    // Per request at the selected duration, never per generated second (sora-2-pro).
    if (duration === null) return unpriced(unit, basis, `${modelId}: duration not given and no default is shown`);
    const rate = model.perRequest.get(String(duration));
    if (!rate) return unpriced(unit, basis, `${modelId} has no published price for a ${duration}-second request`);
    return exactLine(unit, basis, `request:${duration}s`, ONE, rate);
  }
  if (!resolution) return unpriced(unit, basis, `${modelId}: resolution not given and no default is shown`);
  if (duration === null) return unpriced(unit, basis, `${modelId}: duration not given and no default is shown`);
  const rate = model.perSecond.get(resolution);
  if (!rate) return unpriced(unit, basis, `${modelId} has no published price at ${resolution}`);
  return exactLine(unit, basis, `video_seconds:${resolution}`, dec(duration), rate);
}

function exactLine(unit: Unit, basis: PriceBasis, component: string, quantity: Decimal, rate: Decimal): Quote {
  const amount = quantity.times(rate);
  return {
    unit,
    exactness: 'EXACT',
    amount,
    lines: [{ component, quantity, rate, per: ONE, amount }],
    warnings: [],
    needsReview: false,
    basis,
  };
}

function unpriced(unit: Unit, basis: PriceBasis, why: string): Quote {
  return { unit, exactness: 'UNPRICED', amount: ZERO, lines: [], warnings: [why], needsReview: false, basis };
}
