/**
 * Reading a vendor statement's rows (decisions §14), plain TypeScript. The default columns are
 * `task_id` (the vendor's task id), `model`, `time`, `amount` and `unit` (CREDITS or USD) or
 * `currency` (USD; "credits"); a mapping names other columns, scales an amount (cents: 0.01) and
 * says how an ambiguous date is written. Every refusal names the line and the column; nothing is
 * guessed: an amount is a plain decimal (thousands separators only where they group by three), a
 * date is ISO 8601, "YYYY-MM-DD HH:MM[:SS]" (UTC), epoch seconds or milliseconds, or the slashed
 * form its mapping names.
 */
import { amountProblem } from '../pricing/bounds.js';
import { calendarDate } from '../common/dates.js';
import { Decimal } from '../pricing/money.js';

export const FIELDS = ['taskId', 'model', 'time', 'amount', 'unit', 'currency'] as const;
export type Field = (typeof FIELDS)[number];

export const DEFAULT_COLUMNS: Record<Field, string> = {
  taskId: 'task_id',
  model: 'model',
  time: 'time',
  amount: 'amount',
  unit: 'unit',
  currency: 'currency',
};
export const TIME_FORMATS = ['iso', 'epoch-s', 'epoch-ms', 'MM/DD/YYYY', 'DD/MM/YYYY'] as const;

export interface ColumnMapping {
  field: Field;
  column: string;
  /** amount only: multiply by this (0.01 for cents) */
  scale?: string;
  /** time only: one of TIME_FORMATS */
  format?: string;
}

/**
 * A mapping given as JSON text (the upload's `mapping` parameter, the command line's --mapping):
 * at most ten {field, column[, scale][, format]} objects, or why not. What each one says is
 * checked against the header by layoutOf.
 */
export function mappingFromJson(text: string): { mapping: ColumnMapping[] } | { refusal: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { refusal: 'mapping: a JSON array such as [{"field":"amount","column":"Cost (cents)","scale":"0.01"}]' };
  }
  const optionalText = (v: unknown) => v === undefined || typeof v === 'string';
  if (
    !Array.isArray(value) ||
    value.length > 10 ||
    !value.every(
      (m: Partial<Record<keyof ColumnMapping, unknown>> | null) =>
        m &&
        typeof m === 'object' &&
        typeof m.field === 'string' &&
        typeof m.column === 'string' &&
        optionalText(m.scale) &&
        optionalText(m.format),
    )
  )
    return { refusal: 'mapping: a JSON array of {field, column[, scale][, format]}, each a string' };
  return { mapping: value as ColumnMapping[] };
}

export interface Layout {
  index: Partial<Record<Field, number>>;
  columns: Partial<Record<Field, string>>;
  scale: Decimal | null;
  timeFormat: string | null;
}

export interface StatementLine {
  vendorTaskId: string;
  model: string | null;
  billedAt: Date;
  unit: 'USD' | 'CREDITS';
  amount: string;
}

/** A row the statement cannot be read at: the line (1 is the header) and the column. */
export class LineError extends Error {
  constructor(
    readonly line: number,
    readonly column: string | null,
    message: string,
  ) {
    super(`line ${line}${column ? `, column "${column.slice(0, 60)}"` : ''}: ${message}`);
  }
}

export function layoutOf(header: string[], mapping: ColumnMapping[] = []): Layout {
  const columns: Partial<Record<Field, string>> = { ...DEFAULT_COLUMNS };
  let scale: Decimal | null = null;
  let timeFormat: string | null = null;
  for (const m of mapping) {
    if (!(FIELDS as readonly string[]).includes(m.field))
      throw new LineError(1, null, `mapping: "${String(m.field).slice(0, 30)}" is not one of ${FIELDS.join(', ')}`);
    columns[m.field] = m.column;
    if (m.scale !== undefined) {
      if (m.field !== 'amount' || !/^\d{1,12}(\.\d{1,18})?$/.test(m.scale) || new Decimal(m.scale).isZero())
        throw new LineError(1, null, 'mapping: scale is a positive decimal on the amount (0.01 for cents)');
      scale = new Decimal(m.scale);
    }
    if (m.format !== undefined) {
      if (m.field !== 'time' || !(TIME_FORMATS as readonly string[]).includes(m.format))
        throw new LineError(1, null, `mapping: format is one of ${TIME_FORMATS.join(', ')} on the time`);
      timeFormat = m.format;
    }
  }
  const names = header.map((h) => h.trim().toLowerCase());
  const index: Partial<Record<Field, number>> = {};
  for (const field of FIELDS) {
    const at = names.indexOf(columns[field]!.trim().toLowerCase());
    if (at >= 0) index[field] = at;
  }
  for (const field of ['taskId', 'time', 'amount'] as const) {
    if (index[field] === undefined)
      throw new LineError(
        1,
        columns[field]!,
        `the header has no column "${columns[field]}" for ${field}: give a mapping if it is called something else`,
      );
  }
  if (index.unit === undefined && index.currency === undefined)
    throw new LineError(
      1,
      null,
      `the header has neither "${columns.unit}" nor "${columns.currency}": say the unit of the amounts`,
    );
  return { index, columns, scale, timeFormat };
}

export function parseLine(cells: string[], layout: Layout, line: number): StatementLine {
  const cell = (field: Field) =>
    layout.index[field] === undefined ? undefined : (cells[layout.index[field]!] ?? '').trim();
  const fail = (field: Field, message: string) => new LineError(line, layout.columns[field] ?? field, message);
  const id = cell('taskId')!;
  if (!/^\d{1,18}$/.test(id)) throw fail('taskId', `"${id.slice(0, 40)}" is not a vendor task id (digits)`);
  const amount = parseAmount(cell('amount')!, layout.scale);
  if (amount === null)
    throw fail(
      'amount',
      `"${cell('amount')!.slice(0, 40)}" is not an amount (a decimal such as 12.50 or 1,234.5; at most 12 digits before the point and 18 after${layout.scale ? `, also once scaled by ${layout.scale.toFixed()}` : ''})`,
    );
  const billedAt = parseTime(cell('time')!, layout.timeFormat);
  if (billedAt === 'ambiguous')
    throw fail(
      'time',
      `"${cell('time')!.slice(0, 40)}" could be day/month or month/day: give the format in the mapping (MM/DD/YYYY or DD/MM/YYYY)`,
    );
  if (billedAt === null)
    throw fail(
      'time',
      `"${cell('time')!.slice(0, 40)}" is not a time (ISO 8601, YYYY-MM-DD HH:MM:SS in UTC, or epoch seconds)`,
    );
  const unit = parseUnit(cell('unit'), cell('currency'));
  if (unit === null)
    throw fail(
      layout.index.unit !== undefined ? 'unit' : 'currency',
      `"${(cell('unit') ?? cell('currency') ?? '').slice(0, 20)}" is not a unit: CREDITS or USD`,
    );
  const model = cell('model');
  return { vendorTaskId: String(BigInt(id)), model: model ? model.slice(0, 200) : null, billedAt, unit, amount };
}

/** An exact decimal string, or null. Thousands separators must group by three; no exponents, no NaN. */
export function parseAmount(raw: string, scale: Decimal | null): string | null {
  const text = raw.replace(/^\$/, '');
  const match = /^(-?)(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?$/.exec(text);
  if (!match) return null;
  const whole = match[2]!.replaceAll(',', '');
  if (whole.replace(/^0+(?=\d)/, '').length > 12 || (match[3] ?? '').length > 18) return null;
  const value = new Decimal(`${match[1]}${whole}${match[3] ? `.${match[3]}` : ''}`);
  const scaled = (scale ? value.times(scale) : value).toFixed();
  // The bounds hold on what is stored, after the mapping's scale (decisions §16): a scale of 10^-18
  // or 10^12 must not carry an amount past them.
  return amountProblem(scaled) === undefined ? scaled : null;
}

export function parseTime(raw: string, format: string | null): Date | null | 'ambiguous' {
  let t: number;
  if (/^\d{10}$/.test(raw) && format !== 'epoch-ms') t = Number(raw) * 1000;
  else if (/^\d{13}$/.test(raw)) t = Number(raw);
  else if (/^\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?)?(Z|[+-]\d{2}:?\d{2})?$/.test(raw)) {
    // A real calendar date, never rolled over: 2026-02-31 and T24:00 are refused (decisions §16).
    t = calendarDate(raw)?.getTime() ?? Number.NaN;
  } else {
    const m = /^(\d{1,2})\/(\d{1,2})\/(\d{4})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2}))?)?$/.exec(raw);
    if (!m) return null;
    const [a, b] = [Number(m[1]), Number(m[2])];
    let month: number;
    let day: number;
    if (format === 'MM/DD/YYYY') [month, day] = [a, b];
    else if (format === 'DD/MM/YYYY') [day, month] = [a, b];
    else if (a > 12) [day, month] = [a, b];
    else if (b > 12) [month, day] = [a, b];
    else return 'ambiguous';
    if (month < 1 || month > 12 || day < 1 || day > 31) return null;
    t = Date.UTC(Number(m[3]), month - 1, day, Number(m[4] ?? 0), Number(m[5] ?? 0), Number(m[6] ?? 0));
    if (new Date(t).getUTCDate() !== day) return null; // 31/02 is no day, not 3 March
  }
  if (!Number.isFinite(t) || t < Date.UTC(2000, 0, 1) || t > Date.UTC(2100, 0, 1)) return null;
  return new Date(t);
}

function parseUnit(unit: string | undefined, currency: string | undefined): 'USD' | 'CREDITS' | null {
  const u = (unit ?? currency ?? '').toUpperCase();
  if (u === 'USD') return 'USD';
  if (u === 'CREDITS' || u === 'CREDIT') return 'CREDITS';
  return null;
}
