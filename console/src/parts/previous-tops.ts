/**
 * The previous period's spend of exactly the keys the top lists show: one spendReport per list
 * and unit, filtered to those keys (so a key outside the previous top five still has its figure,
 * and a key with none there reads "new").
 */
import { useQuery } from '@urql/preact';
import { errorText, type Money, type Unit } from '../api';
import { UNITS } from '../format';
import type { DayRange } from '../range';

export type Dimension = 'model' | 'project' | 'apiKey' | 'user' | 'tag';

/** Each list's filter argument and its variable's name. */
const FILTERS: Record<Dimension, [string, string]> = {
  model: ['models', 'models'],
  project: ['projectIds', 'projectIds'],
  apiKey: ['apiKeys', 'keys'],
  user: ['users', 'users'],
  tag: ['tags', 'tags'],
};

interface Row {
  keys: string[];
  totals: Money[];
}

/** (dimension, key, unit) → the previous period's amount ('0' when none), or undefined when not compared. */
export interface Previous {
  amountOf(dim: Dimension, key: string, unit: Unit): string | undefined;
  /** the figures are in (or there is nothing to compare) */
  ready: boolean;
  /** why the previous period could not be read */
  error?: string | undefined;
}

export function usePrevious(
  shown: Record<Dimension, string[]>,
  previous: DayRange,
  previousUsers: DayRange,
  projects: string[] | null,
  tagName: string | undefined,
): Previous {
  const dims = (Object.keys(FILTERS) as Dimension[]).filter((d) => shown[d].length > 0);
  const fields = dims.flatMap((d) =>
    UNITS.map((u) => {
      const [arg, variable] = FILTERS[d];
      const range = d === 'user' ? '$ufrom, to: $uto' : '$from, to: $to';
      const groupBy = d === 'tag' ? `"tag:${tagName ?? ''}"` : `"${d}"`;
      // A project filter replaces the scope; the others narrow it.
      const scope = d === 'project' ? `projectIds: $projectIds` : `projectIds: $scope, ${arg}: $${variable}`;
      return `${d}${u}: spendReport(from: ${range}, ${scope}, groupBy: [${groupBy}], unit: ${u}, first: 10) { keys totals { unit amount } }`;
    }),
  );
  const declared = dims.map((d) => `$${FILTERS[d][1]}: [${d === 'project' ? 'ID' : 'String'}!]`).join(', ');
  const query = `query Previous($from: DateTime!, $to: DateTime!, $ufrom: DateTime!, $uto: DateTime!, $scope: [ID!]${declared ? `, ${declared}` : ''}) {\n  ${fields.length ? fields.join('\n  ') : '__typename'}\n}`; // (paused when empty, but parsed)
  const variables: Record<string, unknown> = {
    from: previous.start.toISOString(),
    to: previous.end.toISOString(),
    ufrom: previousUsers.start.toISOString(),
    uto: previousUsers.end.toISOString(),
    scope: projects,
  };
  for (const d of dims) variables[FILTERS[d][1]] = shown[d];
  const [{ data, fetching, error }] = useQuery<Record<string, Row[]>>({ query, variables, pause: dims.length === 0 });
  const ready = dims.length === 0 || ((!!data || !!error) && !fetching);
  if (!data) return { amountOf: () => undefined, ready, error: error ? errorText(error) : undefined };
  return {
    ready,
    amountOf: (dim, key, unit) => {
      if (!dims.includes(dim) || (dim === 'tag' && key === '(none)')) return undefined;
      const rows = data[`${dim}${unit}`] ?? [];
      return rows.find((r) => r.keys[0] === key)?.totals.find((t) => t.unit === unit)?.amount ?? '0';
    },
  };
}
