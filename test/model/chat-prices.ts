/**
 * The model's chat prices (decisions §3, §4, §6), written from upstream-api.md's tables: credits
 * per 1M tokens per class; GPT-5.6's higher tier for every class once the request's input (all
 * prompt tokens) passes 272,000; Anthropic's cache writes without a breakdown at the 5-minute rate.
 * The hold is the input estimate plus max_tokens at output rates, at the tier the estimate implies.
 * A contract's terms (contract-model.ts, §19) set a class's rate where they cover its line.
 *
 * The input estimate itself is the product's own heuristic (src/pricing/token-estimate.ts): the
 * spec leaves how to count a prompt before the vendor does to the product, so the model takes that
 * count as given and prices everything from it itself.
 */
import { Decimal } from 'decimal.js';
import { estimateInputTokens } from '../../src/pricing/token-estimate.js';
import { subjectOf } from './catalog-model.js';
import { rateUnder, type Contract } from './contract-model.js';

export type ChatModel = 'claude-sonnet-5' | 'gpt-5.6-luna';

interface Rates {
  input: string;
  output: string;
  cacheRead: string;
  cacheWrite: string;
}

const RATES: Record<ChatModel, { base: Rates; long?: Rates }> = {
  'claude-sonnet-5': { base: { input: '1528.8', output: '7644', cacheRead: '152.88', cacheWrite: '1911' } },
  'gpt-5.6-luna': {
    base: { input: '147.784', output: '886.704', cacheRead: '14.742', cacheWrite: '184.73' },
    long: { input: '295.568', output: '1330.056', cacheRead: '29.484', cacheWrite: '369.46' },
  },
};

const LONG_CONTEXT = 272_000;
const MILLION = new Decimal(1_000_000);

/** What the vendor reports, in the model's own terms (each class counted once). */
export interface ChatUsage {
  /** uncached prompt tokens */
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
}

/** The tier all prompt tokens imply (`base` or GPT-5.6's `long`), and a class's rate in it under `contract`. */
function ratesFor(model: ChatModel, promptTokens: number, contract: Contract) {
  const r = RATES[model];
  const tier = promptTokens > LONG_CONTEXT && r.long ? 'long' : 'base';
  const list = tier === 'long' ? r.long! : r.base;
  return (cls: keyof Rates) => rateUnder(contract, subjectOf(model), lineOf(model, cls), tier, new Decimal(list[cls]));
}

/**
 * The charge line each class is (its component, as a contract's net rate names it): Anthropic's cache
 * writes without a breakdown are 5-minute writes; GPT-5.6 has a single cache-write rate (`cache_write`).
 */
function lineOf(model: ChatModel, cls: keyof Rates): string {
  if (cls === 'cacheWrite') return model === 'claude-sonnet-5' ? 'cache_write_5m' : 'cache_write';
  return { input: 'input', output: 'output', cacheRead: 'cache_read' }[cls];
}

const cost = (tokens: number, rate: Decimal) => new Decimal(tokens).times(rate).div(MILLION);

export function chatMessages(words: number): Array<{ role: string; content: string }> {
  return [{ role: 'user', content: Array.from({ length: words }, (_, i) => `word${i % 10}`).join(' ') }];
}

/**
 * The hold of a chat submission: the estimated input at input rates plus max_tokens at output
 * rates, under the contract in force (§19).
 */
export function chatHold(model: ChatModel, words: number, maxTokens: number, contract: Contract = []): Decimal {
  const estimate = estimateInputTokens(chatMessages(words));
  const rate = ratesFor(model, estimate, contract);
  return cost(estimate, rate('input')).plus(cost(maxTokens, rate('output')));
}

/** The charge: every class at its rate, at the tier all prompt tokens imply, under the task's contract. */
export function chatCharge(model: ChatModel, u: ChatUsage, contract: Contract = []): Decimal {
  const rate = ratesFor(model, u.input + u.cacheRead + u.cacheWrite, contract);
  return cost(u.input, rate('input'))
    .plus(cost(u.output, rate('output')))
    .plus(cost(u.cacheRead, rate('cacheRead')))
    .plus(cost(u.cacheWrite, rate('cacheWrite')));
}

/** The usage as the vendor's answer carries it, in the model family's own shape. */
export function vendorUsage(model: ChatModel, u: ChatUsage): Record<string, unknown> {
  if (model === 'claude-sonnet-5') {
    return {
      input_tokens: u.input,
      output_tokens: u.output,
      cache_read_input_tokens: u.cacheRead,
      cache_creation_input_tokens: u.cacheWrite,
    };
  }
  // OpenAI's shape: prompt_tokens counts the cached reads and writes too (upstream-api.md: billed independently).
  return {
    prompt_tokens: u.input + u.cacheRead + u.cacheWrite,
    completion_tokens: u.output,
    prompt_tokens_details: { cached_tokens: u.cacheRead, cache_write_tokens: u.cacheWrite },
  };
}
