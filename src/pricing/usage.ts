/**
 * Reads `data.usage` in the three vendor shapes of decisions §2, each with its own semantics,
 * into disjoint token classes. Counts are token counts, not money, so plain integers.
 */
import type { UsageShape } from '../catalog/catalog.types.js';
import { objectAt } from '../common/json.js';
import type { TokenClass } from './pricing.types.js';

export type TokenCounts = Record<TokenClass, number>;

export interface NormalizedUsage {
  shape: UsageShape;
  /** Disjoint classes: every token is in exactly one. */
  tokens: TokenCounts;
  /** All prompt tokens the request sent (uncached + cache read + cache write): the GPT tier basis. */
  promptTokens: number;
  warnings: string[];
}

export type UsageReading = { ok: true; usage: NormalizedUsage } | { ok: false; reason: string };

const EMPTY: TokenCounts = { input: 0, output: 0, cache_read: 0, cache_write_5m: 0, cache_write_1h: 0, cache_write: 0 };

export function readUsage(raw: unknown): UsageReading {
  if (raw === undefined || raw === null) return { ok: false, reason: 'no usage reported' };
  if (typeof raw !== 'object' || Array.isArray(raw)) return { ok: false, reason: 'usage is not an object' };
  const usage = raw as Record<string, unknown>;
  try {
    if ('prompt_tokens' in usage || 'completion_tokens' in usage) return { ok: true, usage: readOpenAi(usage) };
    if ('input_tokens' in usage || 'output_tokens' in usage) return { ok: true, usage: readAnthropic(usage) };
    if ('promptTokenCount' in usage || 'candidatesTokenCount' in usage) return { ok: true, usage: readGemini(usage) };
  } catch (error) {
    return { ok: false, reason: (error as Error).message };
  }
  return { ok: false, reason: 'usage shape not recognised (expected OpenAI, Anthropic or Gemini fields)' };
}

/** OpenAI: prompt_tokens INCLUDES cached_tokens (and cache_write_tokens where reported). */
function readOpenAi(u: Record<string, unknown>): NormalizedUsage {
  const prompt = count(u, 'prompt_tokens');
  const completion = count(u, 'completion_tokens');
  const details = objectAt(u, 'prompt_tokens_details');
  const cached = count(details, 'cached_tokens');
  const written = count(details, 'cache_write_tokens');
  if (cached + written > prompt) {
    throw new Error(`prompt_tokens (${prompt}) is less than cached_tokens + cache_write_tokens (${cached + written})`);
  }
  // reasoning_tokens are already inside completion_tokens: not added again.
  return {
    shape: 'openai',
    tokens: {
      ...EMPTY,
      input: prompt - cached - written,
      cache_read: cached,
      cache_write: written,
      output: completion,
    },
    promptTokens: prompt,
    warnings: [],
  };
}

/** Anthropic: input_tokens EXCLUDES cache reads and writes; thinking is inside output_tokens. */
function readAnthropic(u: Record<string, unknown>): NormalizedUsage {
  const input = count(u, 'input_tokens');
  const output = count(u, 'output_tokens');
  const cacheRead = count(u, 'cache_read_input_tokens');
  const creation = count(u, 'cache_creation_input_tokens');
  const breakdown = objectAt(u, 'cache_creation');
  const warnings: string[] = [];
  let write5m = creation;
  let write1h = 0;
  if (breakdown && ('ephemeral_5m_input_tokens' in breakdown || 'ephemeral_1h_input_tokens' in breakdown)) {
    const b5m = count(breakdown, 'ephemeral_5m_input_tokens');
    const b1h = count(breakdown, 'ephemeral_1h_input_tokens');
    write1h = b1h;
    write5m = b5m;
    if (b5m + b1h < creation) {
      // The part the breakdown does not explain is priced at the default (5-minute) lifetime.
      write5m = creation - b1h;
      warnings.push(
        `cache_creation breakdown (${b5m} + ${b1h}) is below cache_creation_input_tokens (${creation}); the remainder is priced at the 5-minute rate`,
      );
    } else if (b5m + b1h > creation && creation > 0) {
      warnings.push(
        `cache_creation breakdown (${b5m} + ${b1h}) exceeds cache_creation_input_tokens (${creation}); the breakdown is priced`,
      );
    }
  }
  return {
    shape: 'anthropic',
    tokens: { ...EMPTY, input, output, cache_read: cacheRead, cache_write_5m: write5m, cache_write_1h: write1h },
    promptTokens: input + cacheRead + write5m + write1h,
    warnings,
  };
}

/** Gemini: promptTokenCount INCLUDES cachedContentTokenCount; thoughts are NOT in candidates. */
function readGemini(u: Record<string, unknown>): NormalizedUsage {
  const prompt = count(u, 'promptTokenCount');
  const cached = count(u, 'cachedContentTokenCount');
  const candidates = count(u, 'candidatesTokenCount');
  const thoughts = count(u, 'thoughtsTokenCount');
  if (cached > prompt) throw new Error(`promptTokenCount (${prompt}) is less than cachedContentTokenCount (${cached})`);
  return {
    shape: 'gemini',
    tokens: { ...EMPTY, input: prompt - cached, cache_read: cached, output: candidates + thoughts },
    promptTokens: prompt,
    warnings: [],
  };
}

function count(obj: Record<string, unknown> | undefined, key: string): number {
  const value = obj?.[key];
  if (value === undefined || value === null) return 0;
  const n = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) {
    throw new Error(`usage field ${key} is not a non-negative integer`);
  }
  return n;
}
