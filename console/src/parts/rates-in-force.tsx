/** The rates in force now, per model, unit and component, with a filter by model (the price book page). */
import { useQuery } from '@urql/preact';
import { useState } from 'preact/hooks';

/** A rate as the price book answers it (the price book page's diff uses it too). */
export interface Rate {
  model: string;
  component: string;
  key: string;
  tier: string | null;
  tierMaxInput: number | null;
  unit: string;
  rate: string;
}

export const IN_FORCE = `query InForce { priceBook { version effectiveAt rates { model component key tier tierMaxInput unit rate } } }`;

/**
 * What a rate is per (decisions §3): token rates are per 1,000,000 tokens (price = tokens × rate /
 * 1,000,000), a resolution per image, a duration per second… A finance reader copies prices from here.
 */
export const PER: Record<string, string> = {
  token: 'per 1M tokens',
  image: 'per image',
  second: 'per second',
  request: 'per request',
};

export function RatesInForce() {
  const [{ data }] = useQuery<{ priceBook: { version: number; effectiveAt: string; rates: Rate[] } | null }>({
    query: IN_FORCE,
  });
  const [model, setModel] = useState('');
  if (!data?.priceBook) return <p class="loading">Loading the rates in force…</p>;
  const book = data.priceBook;
  const rates = book.rates
    .filter((r) => !model || r.model.toLowerCase().includes(model.toLowerCase()))
    .sort(
      (a, b) =>
        a.model.localeCompare(b.model) ||
        a.unit.localeCompare(b.unit) ||
        a.component.localeCompare(b.component) ||
        a.key.localeCompare(b.key, 'en', { numeric: true }),
    );
  return (
    <div data-testid="rates-in-force" data-version={book.version}>
      <div class="page-head">
        <h2>Rates in force (v{book.version})</h2>
        <label>
          Model{' '}
          <input
            name="rate-model"
            value={model}
            onInput={(e) => setModel((e.target as HTMLInputElement).value)}
            placeholder="any"
          />
        </label>
      </div>
      <div class="scroll">
        <table>
          <thead>
            <tr>
              <th>Model</th>
              <th>Unit</th>
              <th>Component</th>
              <th>Key</th>
              <th>Tier</th>
              <th class="num">Rate</th>
            </tr>
          </thead>
          <tbody>
            {rates.map((r) => (
              <tr data-model={r.model}>
                <td>{r.model}</td>
                <td>{r.unit === 'USD' ? 'USD' : 'credits'}</td>
                <td>{r.component}</td>
                <td>{r.key}</td>
                <td>
                  {r.tier
                    ? `${r.tier}${r.tierMaxInput ? ` (input ≤ ${r.tierMaxInput.toLocaleString('en')})` : ''}`
                    : '—'}
                </td>
                <td class="num" data-rate={r.rate}>
                  {r.rate} {PER[r.component] ?? ''}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}
