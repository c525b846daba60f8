/**
 * Display of exact amounts. The API sends decimals as strings; they are shown as they are (every
 * digit), only grouped by thousands. Nothing here adds amounts: sums come from the API, and
 * credits and USD stay apart. Floats appear only in chart geometry (chart.ts).
 */
import type { Unit } from './api';

export function groupDigits(amount: string): string {
  const negative = amount.startsWith('-');
  const [whole = '0', fraction] = (negative ? amount.slice(1) : amount).split('.');
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${negative ? '−' : ''}${grouped}${fraction ? `.${fraction}` : ''}`;
}

export function money(amount: string, unit: Unit): string {
  return unit === 'USD' ? `$${groupDigits(amount)}` : `${groupDigits(amount)} credits`;
}

export const UNITS: Unit[] = ['USD', 'CREDITS'];

/** A UTC day as YYYY-MM-DD. */
export function day(date: Date | string): string {
  return (typeof date === 'string' ? new Date(date) : date).toISOString().slice(0, 10);
}

export function dateTime(value: string | null | undefined): string {
  if (!value) return '—';
  return value.replace('T', ' ').replace(/\.\d+Z$|Z$/, ' UTC');
}

export function utcMidnight(offsetDays = 0, from = new Date()): Date {
  return new Date(Date.UTC(from.getUTCFullYear(), from.getUTCMonth(), from.getUTCDate() + offsetDays));
}

export function monthStart(offsetMonths = 0, from = new Date()): Date {
  return new Date(Date.UTC(from.getUTCFullYear(), from.getUTCMonth() + offsetMonths, 1));
}
