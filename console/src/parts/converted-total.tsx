/**
 * A range's spend converted to a reporting currency (decisions §19): one labelled figure beside the
 * exact per-unit cards, naming the rates' versions; nothing made up when a rate is missing.
 */
import { useQuery } from '@urql/preact';
import { useState } from 'preact/hooks';
import { currencyAmount } from '../format';

const CONVERTED = `query Converted($from: DateTime!, $to: DateTime!, $projects: [ID!], $currency: String!) {
  reportingCurrencies
  convertedSpend(from: $from, to: $to, projectIds: $projects, currency: $currency) { currency amount label missing }
}`;

export function ConvertedTotal({ from, to, projects }: { from: string; to: string; projects: string[] | null }) {
  const [currency, setCurrency] = useState('USD');
  const [{ data }] = useQuery<{
    reportingCurrencies: string[];
    convertedSpend: { currency: string; amount: string | null; label: string; missing: string[] };
  }>({ query: CONVERTED, variables: { from, to, projects, currency } });
  const c = data?.convertedSpend;
  if (!c) return null;
  return (
    <p class="converted" data-testid="converted" data-amount={c.amount ?? ''} data-currency={c.currency}>
      <label>
        Converted{' '}
        <select name="currency" value={currency} onChange={(e) => setCurrency((e.target as HTMLSelectElement).value)}>
          {data.reportingCurrencies.map((code) => (
            <option value={code}>{code}</option>
          ))}
        </select>
      </label>{' '}
      {c.amount === null ? (
        <span class="hint">not converted: {c.missing.join('; ')}</span>
      ) : (
        <strong title={`${c.amount} ${c.currency}`}>
          {currencyAmount(c.amount)} {c.currency}
        </strong>
      )}{' '}
      <small>({c.label})</small>
    </p>
  );
}
