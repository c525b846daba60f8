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
  /** What the contract makes of the rate (decisions §19); equal to rate when no term covers it. */
  contractedRate?: string;
}

export const IN_FORCE = `query InForce { priceBook { version effectiveAt rates { model component key tier tierMaxInput unit rate contractedRate }
  contract { scope value unit discountPercent component tier netRate } } }`;

interface Term {
  scope: string;
  value: string;
  unit: string;
  discountPercent: string | null;
  component: string | null;
  tier: string | null;
  netRate: string | null;
}

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

/**
 * What a contract's net rate is per, from the charge line it names (`output`, `images:2K`,
 * `video_seconds:720p`, `request:15s`): a net rate is in its list rate's terms, so a token line's is
 * per 1M tokens too, and saying so keeps a reader from taking it per token.
 */
export function perOfLine(component: string): string {
  return PER[LINE_PER[component.split(':')[0]!] ?? 'token']!;
}

/** A charge line's kind (before its colon) to its PER entry; any other line is a token line. */
const LINE_PER: Record<string, string> = { images: 'image', video_seconds: 'second', request: 'request' };

export function RatesInForce() {
  const [{ data }] = useQuery<{
    priceBook: { version: number; effectiveAt: string; rates: Rate[]; contract: Term[] } | null;
  }>({
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
              <th class="num">List rate</th>
              <th class="num">Contracted</th>
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
                <td class="num" data-contracted={r.contractedRate}>
                  {r.contractedRate === r.rate ? '= list' : `${r.contractedRate} ${PER[r.component] ?? ''}`}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <Contract terms={book.contract} />
    </div>
  );
}

/** The contract this version carries (decisions §19), one term a row. */
function Contract({ terms }: { terms: Term[] }) {
  if (terms.length === 0)
    return (
      <p class="hint" data-testid="no-contract">
        No contract: the list rates are what is owed. Finance publishes one with publishContract.
      </p>
    );
  return (
    <table data-testid="contract">
      <thead>
        <tr>
          <th>Contract term</th>
          <th>Unit</th>
          <th>Term</th>
        </tr>
      </thead>
      <tbody>
        {terms.map((t) => (
          <tr>
            <td>
              {t.scope} {t.value}
            </td>
            <td>{t.unit === 'USD' ? 'USD' : 'credits'}</td>
            <td>
              {t.discountPercent !== null
                ? `${t.discountPercent} % off the list rate`
                : `net ${t.netRate} ${perOfLine(t.component ?? '')} for ${t.component}${t.tier ? ` (${t.tier} tier)` : ''}`}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
