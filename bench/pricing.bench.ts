/**
 * `npm run bench:pricing`: exact quotes per second on one core (this process is single-threaded)
 * for a realistic mix: about 60 % chat (short and long prompts, every chat route) and 40 % media
 * (every priced video and image route). Prints figures; asserts nothing.
 */
import os from 'node:os';
import { findRoute, MODEL_ROUTES } from '../src/catalog/catalog.js';
import { quote } from '../src/pricing/engine.js';
import { buildPriceBook, SPEC_PRICE_ROWS } from '../src/pricing/price-book.js';

const book = buildPriceBook(1, new Date('2026-01-01T00:00:00Z'), SPEC_PRICE_ROWS);
const chatRoutes = MODEL_ROUTES.filter((r) => r.kind === 'chat');
const text = (n: number) => 'The quick brown fox jumps over the lazy dog. '.repeat(n);

const media: Array<Record<string, unknown>> = [
  { model: 'seedream-4.0', resolution: '2K', n: 4 },
  { model: 'nano-banana-pro', resolution: '4K' },
  { model: 'sora-2-pro', duration: 15 },
  { model: 'happyhorse-1.0' },
  { model: 'veo-3.1', resolution: '4K', duration: 8 },
  { model: 'minimax-h3', resolution: '768P', duration: 6 },
  { model: 'wan2.7-video', resolution: '1080p', duration: 10 },
];

// A fixed pool of 1,000 requests, 60 % chat / 40 % media, built once (building is not timed).
const pool = Array.from({ length: 1000 }, (_, i) => {
  if (i % 5 < 3) {
    const route = chatRoutes[i % chatRoutes.length]!;
    const size = [2, 20, 200, 2000][i % 4]!; // ~90 bytes to ~90 KB of prompt
    return {
      route,
      body: {
        model: route.id,
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: text(size) },
        ],
        max_tokens: 512,
      },
    };
  }
  const body: Record<string, unknown> = { prompt: 'a lighthouse at dusk', ...media[i % media.length]! };
  return { route: findRoute(body.model as string)!, body };
});

function run(iterations: number): number {
  const start = process.hrtime.bigint();
  let sink = 0;
  for (let i = 0; i < iterations; i++) sink += quote(pool[i % pool.length]!, book).lines.length;
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  if (sink < 0) console.log(sink);
  return iterations / seconds;
}

run(50_000); // warm-up (JIT)
const rounds = [run(300_000), run(300_000), run(300_000)];
const best = Math.max(...rounds);
const median = [...rounds].sort((a, b) => a - b)[1]!;
console.log(
  JSON.stringify(
    {
      benchmark: 'pricing.quote',
      mix: '60% chat / 40% media, 1,000 distinct requests',
      machine: `${os.cpus()[0]?.model ?? 'cpu'} (${os.cpus().length} cores), node ${process.version}`,
      date: new Date().toISOString().slice(0, 10),
      quotesPerSecondMedian: Math.round(median),
      quotesPerSecondBest: Math.round(best),
      target: 200_000,
    },
    null,
    2,
  ),
);
