/**
 * The price book: the rates in force, its versions, what changed between two of them (rate by
 * rate), and for the admin, publishing a new version. Rates are shown as the exact strings the API holds.
 */
import { useMutation, useQuery } from '@urql/preact';
import { useState } from 'preact/hooks';
import { errorText } from '../api';
import { may, useSigned } from '../signed';
import { dateTime } from '../format';
import { IN_FORCE, PER, RatesInForce, type Rate } from '../parts/rates-in-force';

const VERSIONS = `query Versions { priceBookVersions { version effectiveAt } }`;
const TWO = `query Two($a: Int!, $b: Int!) {
  a: priceBook(version: $a) { version note rates { model component key tier tierMaxInput unit rate } }
  b: priceBook(version: $b) { version note rates { model component key tier tierMaxInput unit rate } }
}`;
const PUBLISH = `mutation Publish($effectiveAt: DateTime, $note: String, $rates: [PriceRateInput!]!) { publishPrices(effectiveAt: $effectiveAt, note: $note, rates: $rates) }`;

const id = (r: Rate) => `${r.model} · ${r.component} · ${r.key}${r.tier ? ` · ${r.tier}` : ''}`;

export function diffRates(
  a: Rate[],
  b: Rate[],
): { key: string; before: string | null; after: string | null; unit: string }[] {
  const before = new Map(a.map((r) => [id(r), r]));
  const after = new Map(b.map((r) => [id(r), r]));
  const keys = [...new Set([...before.keys(), ...after.keys()])].sort();
  return keys
    .map((k) => ({
      key: k,
      before: before.get(k)?.rate ?? null,
      after: after.get(k)?.rate ?? null,
      unit: (after.get(k) ?? before.get(k))!.unit,
    }))
    .filter((d) => d.before !== d.after);
}

export function PriceBook() {
  const { viewer } = useSigned();
  const [{ data, error }, reload] = useQuery<{ priceBookVersions: { version: number; effectiveAt: string }[] }>({
    query: VERSIONS,
  });
  const versions = data?.priceBookVersions ?? [];
  const latest = versions.at(-1)?.version ?? 1;
  const [picked, setPicked] = useState<{ a?: number; b?: number }>({});
  const b = picked.b ?? latest;
  const a = picked.a ?? Math.max(1, b - 1);
  const [two] = useQuery<{
    a: { rates: Rate[] } | null;
    b: { version: number; note: string | null; rates: Rate[] } | null;
  }>({ query: TWO, variables: { a, b }, pause: !data });
  const [inForce] = useQuery({ query: IN_FORCE }); // the same request as RatesInForce's: the page is ready with both
  if (error)
    return (
      <p class="error" role="alert">
        {errorText(error)}
      </p>
    );
  const changes = two.data?.a && two.data?.b ? diffRates(two.data.a.rates, two.data.b.rates) : [];
  const pick = (name: string, value: number | undefined, set: (v: number) => void) => (
    <label>
      {name}{' '}
      <select name={name} value={value} onChange={(e) => set(Number((e.target as HTMLSelectElement).value))}>
        {versions.map((v) => (
          <option value={v.version}>
            v{v.version} (from {dateTime(v.effectiveAt)})
          </option>
        ))}
      </select>
    </label>
  );
  return (
    <section data-ready={two.data && inForce.data ? 'prices' : undefined}>
      <h1>Price book</h1>
      <RatesInForce />
      <h2>Versions</h2>
      <table>
        <thead>
          <tr>
            <th>Version</th>
            <th>In force from (UTC)</th>
          </tr>
        </thead>
        <tbody>
          {versions.map((v) => (
            <tr>
              <td>v{v.version}</td>
              <td>{dateTime(v.effectiveAt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>What changed</h2>
      <div class="page-head">
        {pick('from', a, (v) => setPicked({ a: v, b }))}
        {pick('to', b, (v) => setPicked({ a, b: v }))}
      </div>
      {a === b ? (
        <p class="none">
          {versions.length < 2
            ? 'Only one version so far: the rates above are all there is; a new version shows its changes here.'
            : 'Pick two different versions.'}
        </p>
      ) : changes.length === 0 ? (
        <p class="none">
          No rate differs between v{a} and v{b}.
        </p>
      ) : (
        <table data-testid="price-diff">
          <thead>
            <tr>
              <th>Model · component · key · tier</th>
              <th class="num">v{a}</th>
              <th class="num">v{b}</th>
              <th>Unit</th>
            </tr>
          </thead>
          <tbody>
            {changes.map((c) => (
              <tr>
                <td>{c.key}</td>
                <td class="num">{c.before ?? 'not priced'}</td>
                <td class="num">{c.after ?? 'not priced'}</td>
                <td>
                  {c.unit === 'USD' ? 'USD' : 'credits'} {PER[c.key.split(' · ')[1] ?? ''] ?? ''}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {may(viewer, 'admin') && <Publish onDone={() => reload({ requestPolicy: 'network-only' })} />}
    </section>
  );
}

/** One rate per line: model,component,key,rate,unit[,tier[,tierMaxInput]]. */
export function parseRates(text: string): Array<Record<string, string | number>> {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((line, i) => {
      const [model, component, key, rate, unit, tier, max] = line.split(',').map((s) => s.trim());
      if (!model || !component || !key || !rate || !unit)
        throw new Error(`line ${i + 1}: write model,component,key,rate,unit[,tier[,tierMaxInput]]`);
      return {
        model,
        component,
        key,
        rate,
        unit,
        ...(tier ? { tier } : {}),
        ...(max ? { tierMaxInput: Number(max) } : {}),
      };
    });
}

function Publish({ onDone }: { onDone(): void }) {
  const [effectiveAt, setEffectiveAt] = useState('');
  const [note, setNote] = useState('');
  const [text, setText] = useState('');
  const [problem, setProblem] = useState('');
  const [result, publish] = useMutation(PUBLISH);
  return (
    <form
      class="card publish"
      onSubmit={async (e) => {
        e.preventDefault();
        setProblem('');
        let rates;
        try {
          rates = parseRates(text);
        } catch (err) {
          return setProblem((err as Error).message);
        }
        const at = effectiveAt ? new Date(`${effectiveAt}Z`).toISOString() : null; // none: now, by the server's clock
        const done = await publish({ effectiveAt: at, note: note || null, rates });
        if (!done.error) onDone();
      }}
    >
      <h2>Publish a new version</h2>
      <p class="hint">
        Models you list get these rates from the moment given (UTC; empty: now); every other rate carries over. Tasks
        already accepted keep their version.
      </p>
      <label>
        Effective at (UTC){' '}
        <input
          type="datetime-local"
          name="effectiveAt"
          value={effectiveAt}
          onInput={(e) => setEffectiveAt((e.target as HTMLInputElement).value)}
        />
      </label>
      <label>
        Note <input name="note" value={note} onInput={(e) => setNote((e.target as HTMLInputElement).value)} />
      </label>
      <label>
        Rates, one per line: model,component,key,rate,unit[,tier[,tierMaxInput]] (a token rate is per 1,000,000 tokens)
        <textarea
          name="rates"
          rows={4}
          value={text}
          placeholder="gpt-5.6-sol,token,input,1.25,USD"
          onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
        />
      </label>
      <button type="submit" disabled={result.fetching || !text.trim()}>
        Publish
      </button>
      {(problem || result.error) && (
        <p class="error" role="alert">
          {problem || errorText(result.error)}
        </p>
      )}
      {result.data && (
        <p class="ok">Published version {String((result.data as { publishPrices: number }).publishPrices)}.</p>
      )}
    </form>
  );
}
