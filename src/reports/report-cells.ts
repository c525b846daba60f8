/**
 * How a spend report's cells cross the wire from PostgreSQL (spend-report.ts's readRows): text
 * costs the database most of a large report's time (a 9,000-group month is 135,000 cells), so
 * what can be sent cheaper is: zeros as NULL, days as numbers (bench/FINDINGS.md).
 */
/**
 * A measure's cell as the database sends it: NULL for a zero whose text is "0" (an int, a bigint,
 * a sum of them, a numeric of scale 0), read back as "0" or 0. Half the cells of a month by
 * project × model × day are such zeros (a chat model has no video seconds, a video model no
 * tokens), and writing each as text was a quarter of that report's time in the database. The
 * amount keeps its cell; a zero with decimals ("0.000") keeps its text.
 */
export function sentCell(alias: string): string {
  if (alias === 'amount' || alias === 'tasks') return `g.${alias}`;
  if (alias === 'seconds') return 'CASE WHEN g.seconds = 0 AND scale(g.seconds) = 0 THEN NULL ELSE g.seconds END';
  return `nullif(g.${alias}, 0)`;
}

/**
 * The first n cells of a row as text, in one array (a report may have tens of thousands of rows); days arrive as
 * numbers.
 */
export function keysOf(row: unknown[], n: number, days: number[]): string[] {
  const keys = new Array<string>(n);
  for (let i = 0; i < n; i++) keys[i] = String(row[i]);
  for (const i of days) keys[i] = isoDay(Number(row[i]));
  return keys;
}

const ISO_DAYS = new Map<number, string>();
const MS_PER_DAY = 86_400_000;

/** Days since 1970-01-01 as YYYY-MM-DD (a report has a few hundred distinct days at most: kept). */
function isoDay(days: number): string {
  let text = ISO_DAYS.get(days);
  if (text === undefined) {
    text = new Date(days * MS_PER_DAY).toISOString().slice(0, 10);
    if (ISO_DAYS.size < 100_000) ISO_DAYS.set(days, text);
  }
  return text;
}
