/**
 * CSV cells, for every CSV the service writes (reports over HTTP, `spendgate report`, the FOCUS
 * export). Quoting per RFC 4180, and formula injection neutralised the way OWASP describes: a text
 * cell that a spreadsheet would read as a formula (it starts with =, +, -, @, a tab or a carriage
 * return) is prefixed with a single quote. Numbers the service itself wrote (exact decimals, which
 * may be negative) are left as they are, so that amounts stay numbers, and so is a lone "-" (the
 * reports' "no such value"), which no spreadsheet evaluates.
 */

const FORMULA_START = /^[=+\-@\t\r]/;
const PLAIN_NUMBER = /^-?\d+(\.\d+)?$/;

export function csvCell(value: string | number | null | undefined): string {
  if (value === null || value === undefined) return '';
  let text = String(value);
  if (typeof value !== 'number' && text.length > 1 && FORMULA_START.test(text) && !PLAIN_NUMBER.test(text))
    text = `'${text}`;
  return /[",\n\r]/.test(text) || text.startsWith("'") ? `"${text.replaceAll('"', '""')}"` : text;
}

export function csvLine(cells: ReadonlyArray<string | number | null | undefined>): string {
  return cells.map(csvCell).join(',');
}
