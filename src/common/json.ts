/** JSON.parse that answers undefined instead of throwing: upstream bodies are not trusted. */
export function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A plain JSON object (not null, not an array). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `obj[key]` when it is a plain object; undefined otherwise (or when obj is missing). */
export function objectAt(obj: Record<string, unknown> | undefined, key: string): Record<string, unknown> | undefined {
  const value = obj?.[key];
  return isObject(value) ? value : undefined;
}
