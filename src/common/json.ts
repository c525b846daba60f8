/** JSON.parse that answers undefined instead of throwing: upstream bodies are not trusted. */
export function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
