/**
 * Pricing, as worked examples. Each case shows the arithmetic a finance person would do by hand:
 * tokens × rate per 1M / 1,000,000, summed per class; seconds × rate; images × rate × n.
 * These run on the pure engine; test/gateway/gateway.test.ts ("decisions §3 worked examples") runs the same figures
 * through the running service.
 */
import fc from 'fast-check';
import { findRoute } from '../../src/catalog/catalog.js';
import { price, quote, type PriceBasis } from '../../src/pricing/engine.js';
import { dec, Money } from '../../src/pricing/money.js';
import { buildPriceBook, SPEC_PRICE_ROWS } from '../../src/pricing/price-book.js';

const book = buildPriceBook(1, new Date('2026-01-01T00:00:00Z'), SPEC_PRICE_ROWS);
const chat = (model: string) => ({
  model,
  unit: 'CREDITS' as const,
  basis: { kind: 'chat', inputTokensEstimate: 0, maxTokens: 4096, maxTokensSource: 'route default' } as PriceBasis,
});
const media = (model: string, body: Record<string, unknown>) =>
  quote({ route: findRoute(model)!, body: { model, prompt: 'p', ...body } }, book);

describe('worked examples (decisions §3 table)', () => {
  test('gpt-5.6-sol, OpenAI usage, prompt 272,000 (cached 72,000), completion 10,000 → 987.19712 credits, base tier', () => {
    // input 200,000 × 3694.6 / 1M = 738.92 ; cache read 72,000 × 369.46 / 1M = 26.60112 ; output 10,000 × 22167.6 / 1M
    // = 221.676
    const c = price(
      chat('gpt-5.6-sol'),
      { prompt_tokens: 272_000, completion_tokens: 10_000, prompt_tokens_details: { cached_tokens: 72_000 } },
      book,
    );
    expect(c.amount.toFixed()).toBe('987.19712');
    expect(c.tier).toBe('base');
    expect(c.unit).toBe('CREDITS');
    expect(c.lines.map((l) => [l.component, l.quantity.toFixed(), l.rate.toFixed(), l.amount.toFixed()])).toEqual([
      ['input', '200000', '3694.6', '738.92'],
      ['output', '10000', '22167.6', '221.676'],
      ['cache_read', '72000', '369.46', '26.60112'],
    ]);
  });

  test('same with prompt 272,001 → 1863.5636292 credits, long tier on every class', () => {
    // input 200,001 × 7389.2 / 1M = 1477.8473892 ; cache read 72,000 × 738.92 / 1M = 53.20224 ; output 10,000 × 33251.4
    // / 1M = 332.514
    const c = price(
      chat('gpt-5.6-sol'),
      { prompt_tokens: 272_001, completion_tokens: 10_000, prompt_tokens_details: { cached_tokens: 72_000 } },
      book,
    );
    expect(c.amount.toFixed()).toBe('1863.5636292');
    expect(c.tier).toBe('long');
    expect(c.lines.map((l) => l.rate.toFixed())).toEqual(['7389.2', '33251.4', '738.92']);
  });

  test('claude-opus-4-8, Anthropic usage → 144.0894 credits', () => {
    // input 1,200 × 3822 / 1M = 4.5864 ; cache read 50,000 × 382.2 / 1M = 19.11 ;
    // write 5m 10,000 × 4777.5 / 1M = 47.775 ; write 1h 2,000 × 7644 / 1M = 15.288 ; output 3,000 × 19110 / 1M = 57.33
    const c = price(
      chat('claude-opus-4-8'),
      {
        input_tokens: 1_200,
        output_tokens: 3_000,
        cache_read_input_tokens: 50_000,
        cache_creation_input_tokens: 12_000,
        cache_creation: { ephemeral_5m_input_tokens: 10_000, ephemeral_1h_input_tokens: 2_000 },
      },
      book,
    );
    expect(c.amount.toFixed()).toBe('144.0894');
    expect(c.lines.map((l) => [l.component, l.amount.toFixed()])).toEqual([
      ['input', '4.5864'],
      ['output', '57.33'],
      ['cache_read', '19.11'],
      ['cache_write_5m', '47.775'],
      ['cache_write_1h', '15.288'],
    ]);
  });

  test('claude cache writes without a breakdown are priced at the 5-minute rate', () => {
    // 12,000 × 4777.5 / 1M = 57.33 replaces 47.775 + 15.288 → 4.5864 + 19.11 + 57.33 + 57.33 = 138.3564
    const c = price(
      chat('claude-opus-4-8'),
      {
        input_tokens: 1_200,
        output_tokens: 3_000,
        cache_read_input_tokens: 50_000,
        cache_creation_input_tokens: 12_000,
      },
      book,
    );
    expect(c.amount.toFixed()).toBe('138.3564');
  });

  test('gemini-3.8-flash, Gemini usage: prompt 20,000 (cached 8,000), candidates 1,500, thoughts 2,500 → 31.9956 credits', () => {
    // input 12,000 × 955.5 / 1M = 11.466 ; cache read 8,000 × 109.2 / 1M = 0.8736 ; output (1,500 + 2,500) × 4914 / 1M
    // = 19.656
    const c = price(
      chat('gemini-3.8-flash'),
      {
        promptTokenCount: 20_000,
        cachedContentTokenCount: 8_000,
        candidatesTokenCount: 1_500,
        thoughtsTokenCount: 2_500,
      },
      book,
    );
    expect(c.amount.toFixed()).toBe('31.9956');
  });

  test.each([
    ['seedream-4.0, 2K, n 7', '0.42', 'seedream-4.0', { resolution: '2K', n: 7 }], // 7 × 0.060
    ['nano-banana-pro, 4K', '0.26', 'nano-banana-pro', { resolution: '4K' }], // 1 × 0.260
    ['sora-2-pro, duration 15', '0.72', 'sora-2-pro', { duration: 15 }], // per request, not per second
    ['sora-2-pro, default 10 s', '0.48', 'sora-2-pro', {}],
    ['happyhorse-1.0, no resolution or duration', '0.88', 'happyhorse-1.0', {}], // 720p, 5 s × 0.176
    ['happyhorse-1.0, 1080p, 15 s', '3.84', 'happyhorse-1.0', { resolution: '1080p', duration: 15 }], // 15 × 0.256
    ['veo-3.1, 4K, 8 s', '4.16', 'veo-3.1', { resolution: '4K', duration: 8 }], // 8 × 0.520
    ['veo-3.1, 1080p, 8 s', '2.88', 'veo-3.1', { resolution: '1080p', duration: 8 }], // 8 × 0.360
    ['minimax-h3, 768P, 6 s', '0.54', 'minimax-h3', { resolution: '768P', duration: 6 }], // 6 × 0.090
    ['wan2.7-video, 1080p, 10 s', '2.4', 'wan2.7-video', { resolution: '1080p', duration: 10 }], // 10 × 0.240
    ['seedream-4.0 default (1K, n 1)', '0.04', 'seedream-4.0', {}],
  ])('%s → %s USD', (_name, expected, model, body) => {
    const q = media(model, body);
    expect(q.exactness).toBe('EXACT');
    expect(q.unit).toBe('USD');
    expect(q.amount.toFixed()).toBe(expected);
  });

  test.each([
    ['seedream-5.0', {}],
    ['seedream-4.5', { resolution: '4K' }],
    ['minimax-h3 at 1080P', { resolution: '1080P', duration: 6 }],
    ['wan2.7-video with no resolution (no shown default)', { duration: 5 }],
    ['veo-3.1 with no duration (no shown default)', { resolution: '720p' }],
  ])('%s is unpriced', (name, body) => {
    const q = media(name.split(' ')[0]!, body);
    expect(q.exactness).toBe('UNPRICED');
    expect(q.amount.toFixed()).toBe('0');
    expect(q.warnings[0]).toMatch(/no published price|not given/);
  });
});

describe('usage semantics and warnings', () => {
  test('missing usage on a ready chat task is charged at the estimate, flagged for review', () => {
    const task = {
      model: 'glm-5.3',
      unit: 'CREDITS' as const,
      basis: { kind: 'chat', inputTokensEstimate: 1000, maxTokens: 100, maxTokensSource: 'request' } as PriceBasis,
    };
    const c = price(task, undefined, book);
    // 1,000 × 1400 / 1M = 1.4 ; 100 × 4900 / 1M = 0.49
    expect(c.amount.toFixed()).toBe('1.89');
    expect(c.exactness).toBe('ESTIMATE');
    expect(c.needsReview).toBe(true);
  });

  test('a token class with no rate is recorded as a warning, not dropped silently', () => {
    const c = price(
      chat('glm-5.3'),
      { prompt_tokens: 100, completion_tokens: 10, prompt_tokens_details: { cache_write_tokens: 50 } },
      book,
    );
    expect(c.warnings.join()).toMatch(/50 cache_write tokens reported but glm-5.3 has no cache_write rate/);
    expect(c.needsReview).toBe(true);
  });

  test('the chat estimate uses max_tokens at output rates, at the tier its input implies', () => {
    const route = findRoute('gpt-5.6-luna')!;
    const q = quote(
      { route, body: { model: route.id, messages: [{ role: 'user', content: 'x'.repeat(300) }], max_tokens: 1000 } },
      book,
    );
    // input estimate: 4 + 300/3 = 104 tokens × 147.784 / 1M ; output 1,000 × 886.704 / 1M
    expect(q.exactness).toBe('ESTIMATE');
    expect(q.amount.toFixed()).toBe(
      dec(104).times('147.784').div(1e6).plus(dec(1000).times('886.704').div(1e6)).toFixed(),
    );
  });
});

describe('properties (fast-check)', () => {
  const openai = (prompt: number, cached: number, completion: number) => ({
    prompt_tokens: prompt,
    completion_tokens: completion,
    prompt_tokens_details: { cached_tokens: cached },
  });

  test('cost never decreases as a token count grows, except across the tier jump at exactly 272,000', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 600_000 }),
        fc.integer({ min: 1, max: 5_000 }),
        fc.integer({ min: 0, max: 50_000 }),
        (prompt, step, completion) => {
          const a = price(chat('gpt-5.6-terra'), openai(prompt, 0, completion), book);
          const b = price(chat('gpt-5.6-terra'), openai(prompt + step, 0, completion), book);
          // Growing input never lowers the price; the higher tier starts strictly above 272,000.
          expect(b.amount.gte(a.amount)).toBe(true);
          expect(a.tier).toBe(prompt <= 272_000 ? 'base' : 'long');
          const more = price(chat('gpt-5.6-terra'), openai(prompt, 0, completion + step), book);
          expect(more.amount.gte(a.amount)).toBe(true);
        },
      ),
      { numRuns: 500 },
    );
  });

  test('lines always sum to the total, for every route and usage shape', () => {
    const models = ['claude-sonnet-5', 'gemini-3.6-flash', 'glm-5.3', 'gpt-5.6-luna'];
    fc.assert(
      fc.property(
        fc.constantFrom(...models),
        fc.nat(400_000),
        fc.nat(100_000),
        fc.nat(50_000),
        fc.nat(20_000),
        (model, a, b, c, d) => {
          const usage = model.startsWith('claude')
            ? { input_tokens: a, output_tokens: c, cache_read_input_tokens: b, cache_creation_input_tokens: d }
            : model.startsWith('gemini')
              ? { promptTokenCount: a + b, cachedContentTokenCount: b, candidatesTokenCount: c, thoughtsTokenCount: d }
              : openai(a + b, b, c);
          const charge = price(chat(model), usage, book);
          expect(
            Money.total(
              charge.unit,
              charge.lines.map((l) => Money.of(charge.unit, l.amount)),
            ).amount.eq(charge.amount),
          ).toBe(true);
          for (const l of charge.lines) expect(l.quantity.times(l.rate).div(l.per).eq(l.amount)).toBe(true);
        },
      ),
      { numRuns: 500 },
    );
  });

  test('the tier boundary: 272,000 is base, 272,001 is long, for every GPT-5.6 route', () => {
    for (const model of ['gpt-5.6-luna', 'gpt-5.6-terra', 'gpt-5.6-sol']) {
      expect(price(chat(model), openai(272_000, 0, 1), book).tier).toBe('base');
      expect(price(chat(model), openai(272_001, 0, 1), book).tier).toBe('long');
    }
  });
});
