/**
 * Rules of the house that a reviewer should not have to check by eye: money arithmetic refuses to
 * mix credits and USD, the money core imports nothing from Nest or Prisma, no two modules import
 * each other, and no folder imports one that depends on it (type-only imports included).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { MixedUnitsError, Money } from '../../src/pricing/money.js';
// @ts-expect-error a plain .mjs script, no types: its two functions are used as they are
import { cycles, folderCycles, importGraph } from '../../scripts/import-cycles.mjs';

test('Money keeps its unit: credits and USD never add, subtract or compare', () => {
  const credits = Money.of('CREDITS', '1.5');
  const usd = Money.of('USD', '0.04');
  expect(credits.plus(Money.of('CREDITS', '0.25')).toString()).toBe('1.75 CREDITS');
  expect(() => credits.plus(usd)).toThrow(MixedUnitsError);
  expect(() => credits.minus(usd)).toThrow('credits and USD never mix: CREDITS with USD');
  expect(() => usd.greaterThan(credits)).toThrow(MixedUnitsError);
  expect(() => Money.total('USD', [usd, credits])).toThrow(MixedUnitsError);
  expect(Money.total('USD', []).toString()).toBe('0 USD');
  expect(usd.times('2.5').toFixed()).toBe('0.1');
});

test('the money core (catalog, pricing) imports nothing from Nest or Prisma', () => {
  for (const dir of ['src/catalog', 'src/pricing']) {
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.ts') && !f.endsWith('.service.ts'))) {
      const text = readFileSync(path.join(dir, file), 'utf8');
      expect({ file, nest: /from '@nestjs\//.test(text), prisma: /prisma/.test(text) }).toEqual({
        file,
        nest: false,
        prisma: false,
      });
    }
  }
});

test("no import cycles among src/ modules, nor among the console's (its pages read the session from signed.ts, not from the shell)", () => {
  expect(cycles(importGraph(path.resolve('src')))).toEqual([]);
  expect(cycles(importGraph(path.resolve('console/src')))).toEqual([]);
});

test('no folder imports one that depends on it: the layers hold (each cycle named, with an import per step)', () => {
  expect(folderCycles(importGraph(path.resolve('src')), path.resolve('src'))).toEqual([]);
});

test('tests live by capability (test/<capability>/), and code cites decisions sections, not issue numbers', () => {
  const top = readdirSync('test').filter((f) => f.endsWith('.test.ts'));
  expect(top).toEqual([]);
  const cited: string[] = [];
  for (const dir of ['src', 'test', 'console/src', 'bench', 'prisma/functions']) {
    for (const file of (readdirSync(dir, { recursive: true }) as string[]).filter((f) =>
      /\.(ts|tsx|sql|css|mjs)$/.test(f),
    )) {
      readFileSync(path.join(dir, file), 'utf8')
        .split('\n')
        .forEach((line, i) => /\bissues? \d+\b/i.test(line) && cited.push(`${dir}/${file}:${i + 1}`));
    }
  }
  expect(cited).toEqual([]);
});
