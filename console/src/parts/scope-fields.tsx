/**
 * What a budget or a limit counts, as two form fields: the scope, and its value when it takes one
 * (the API checks the value; decisions §7, §20).
 */
const SCOPES = ['PROJECT', 'API_KEY', 'TAG', 'USER', 'EACH_USER'];
const NEEDS_VALUE: Record<string, string> = { API_KEY: "the key's prefix", TAG: 'name=value', USER: 'the end user' };

/** The scope's value as the form holds it, or null for a scope that takes none. */
export function scopeValueOf(form: HTMLFormElement, scope: string): string | null {
  if (!NEEDS_VALUE[scope]) return null;
  return ((form.elements.namedItem('scopeValue') as HTMLInputElement | null)?.value ?? '').trim();
}

export function ScopeFields({ scope, onScope }: { scope: string; onScope(scope: string): void }) {
  return (
    <>
      <label>
        Scope{' '}
        <select name="scope" value={scope} onChange={(e) => onScope((e.target as HTMLSelectElement).value)}>
          {SCOPES.map((s) => (
            <option value={s}>{s.toLowerCase().replace('_', ' ')}</option>
          ))}
        </select>
      </label>
      {NEEDS_VALUE[scope] && (
        <label>
          Which <input name="scopeValue" required placeholder={NEEDS_VALUE[scope]} />
        </label>
      )}
    </>
  );
}
