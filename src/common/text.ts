/**
 * Free text that operators and clients send (project names, reasons, notes): PostgreSQL's text
 * cannot hold a NUL character and control characters in a name are never meant, so they are
 * refused here, naming the field, instead of reaching the database.
 */
import { ApiError } from './api-error.js';

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;

/** Trimmed text of 1..max characters without control characters (line breaks allowed when `multiline`). */
export function cleanText(field: string, value: string, max: number, { multiline = false } = {}): string {
  const text = value.trim();
  if (!text || text.length > max) throw ApiError.badRequest(`${field}: must be 1 to ${max} characters`);
  if (CONTROL.test(text) || (!multiline && /[\n\r]/.test(text))) {
    throw ApiError.badRequest(`${field}: must not contain control characters${multiline ? '' : ' or line breaks'}`);
  }
  return text;
}

/** Whether text holds a control character (NUL included), which no name or filter value means. */
export function hasControl(text: string): boolean {
  return CONTROL.test(text) || /[\n\r]/.test(text);
}
