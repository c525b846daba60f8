/**
 * The command line's refusals, as an operator meets them: a wrong argument is one line naming it and
 * the usage (exit 2), a refusal of the books one line (exit 1); never a stack trace, never a row or a
 * directory left behind. And the upload's column mapping and the command line's are read by one rule.
 */
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Gateway } from '../../src/bootstrap.js';
import { spendgate } from '../support/cli.js';
import { ADMIN, freshDatabase, gateway, http, sql } from '../support/harness.js';

let url: string;
let gw: Gateway;
const dir = mkdtempSync(path.join(os.tmpdir(), 'spendgate-cli-'));
const statement = path.join(dir, 'statement.csv');

beforeAll(async () => {
  url = await freshDatabase();
  gw = await gateway(url);
  writeFileSync(statement, 'task_id,model,time,amount,unit\n1,seedream-4.0,2026-11-01T00:00:00Z,0.04,USD\n');
});
afterAll(() => gw.close());

const cli = (env: Record<string, string>, ...args: string[]) => spendgate({ DATABASE_URL: url, ...env }, ...args);

const statements = async () => Number((await sql(gw, 'SELECT count(*)::int AS n FROM vendor_statement'))[0]!.n);

test('a column mapping of another shape is refused by the one rule, from the command line and the upload alike', async () => {
  const refusal = 'mapping: a JSON array of {field, column[, scale][, format]}, each a string';
  for (const mapping of [
    '{"amount":"cost"}',
    '5',
    '[null]',
    '[{"field":"amount","column":5}]',
    // a number is binary: the scale is written as the decimal it is
    '[{"field":"amount","column":"amount","scale":0.01}]',
    '[{"field":"time","column":"time","format":1}]',
  ]) {
    const r = await cli({}, 'vendor', 'import', statement, '--mapping', mapping);
    expect([r.code, r.out.split('\n')[0]]).toEqual([2, `spendgate: --${refusal}`]);
    const upload = await http(`${gw.url}/reports/vendor-statements?mapping=${encodeURIComponent(mapping)}`, {
      key: ADMIN,
      method: 'POST',
      headers: { 'content-type': 'text/csv' },
      raw: 'task_id,model,time,amount,unit\n',
    });
    expect([upload.status, upload.body]).toEqual([400, { code: 4000, message: refusal }]);
  }
  expect(await statements()).toBe(0);
});

test('a statement file that cannot be read is named with why, not a stack trace', async () => {
  for (const [file, why] of [
    [path.join(dir, 'missing.csv'), 'does not exist'],
    [dir, 'is a directory, not a file'],
  ] as const) {
    const r = await cli({}, 'vendor', 'import', file);
    expect([r.code, r.out]).toEqual([1, `spendgate: statement: ${JSON.stringify(file)} ${why}\n`]);
  }
  expect(await statements()).toBe(0);
});

test('an unknown option, a missing value or an unknown format is a wrong use: the usage, exit 2, no node internals', async () => {
  for (const [args, line] of [
    [['--bogus'], "spendgate: Unknown option '--bogus'"],
    [['--first'], "spendgate: Option '--first <value>' argument missing"],
    [['--format', 'xml'], 'spendgate: --format: "xml" is not one of csv, json, focus'],
  ] as const) {
    const r = await cli({}, 'report', '--from', '2026-11-01', '--to', '2026-12-01', ...args);
    expect(r.code).toBe(2);
    expect(r.out.split('\n').slice(0, 2)).toEqual([line, 'usage: spendgate <command>']);
    expect(r.out).not.toMatch(/TypeError|ERR_PARSE_ARGS|\n\s+at /);
  }
  const json = await cli({}, 'report', '--from', '2026-11-01', '--to', '2026-12-01', '--format', 'json');
  expect([json.code, json.out]).toEqual([0, '[]\n']);
});

test('a refused archive leaves no directory behind, ARCHIVE_DIR included', async () => {
  const archiveDir = path.join(dir, 'not-yet', 'archives');
  const r = await cli({ ARCHIVE_DIR: archiveDir }, 'archive', '2026-10');
  expect([r.code, r.out]).toEqual([1, 'spendgate: month 2026-10: only a closed month is archived (close it first)\n']);
  expect(existsSync(path.join(dir, 'not-yet'))).toBe(false);
});
