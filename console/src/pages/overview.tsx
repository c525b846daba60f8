/**
 * Overview: today, month to date and the chosen range per unit (credits and USD never summed),
 * spend per day as a chart per unit stacked by model or project, and the top models, projects,
 * keys, users and tags. Every figure is an exact string from spendReport.
 */
import { useQuery } from '@urql/preact';
import { useState } from 'preact/hooks';
import { errorText, type Money, type Unit } from '../api';
import { useSigned } from '../app';
import { day, monthStart, UNITS, utcMidnight } from '../format';
import { Amounts } from '../parts/amounts';
import { loadChart, SpendChart } from '../parts/spend-chart';
import { TopList, type Ranked } from '../parts/top-list';
import { Empty } from '../parts/empty';
import { EarlyWarning } from '../parts/early-warning';

interface Row {
  keys: string[];
  tasks: number;
  totals: Money[];
}

const TOP = (alias: string, dim: string, unit: Unit, range = '$from, to: $to') =>
  `${alias}${unit}: spendReport(from: ${range}, projectIds: $projects, groupBy: ["${dim}"], unit: ${unit}, orderBy: AMOUNT_DESC, first: 5) { keys tasks totals { unit amount } }`;

const OVERVIEW = `query Overview($from: DateTime!, $to: DateTime!, $today: DateTime!, $tomorrow: DateTime!, $month: DateTime!, $nextMonth: DateTime!, $projects: [ID!], $stack: [String!]!) {
  today: spendReport(from: $today, to: $tomorrow, projectIds: $projects, first: 1) { tasks totals { unit amount } }
  monthToDate: spendReport(from: $month, to: $tomorrow, projectIds: $projects, first: 1) { tasks totals { unit amount } }
  range: spendReport(from: $from, to: $to, projectIds: $projects, first: 1) { tasks totals { unit amount } }
  series: spendReport(from: $from, to: $to, projectIds: $projects, groupBy: $stack) { keys totals { unit amount } }
  tagNames(from: $from, to: $to, projectIds: $projects)
  ${UNITS.flatMap((u) => [TOP('model', 'model', u), TOP('project', 'project', u), TOP('apiKey', 'apiKey', u), TOP('user', 'user', u, '$month, to: $nextMonth')]).join('\n  ')}
}`;

const TAGS = `query TopTags($from: DateTime!, $to: DateTime!, $projects: [ID!], $tag: [String!]!) {
  ${UNITS.map((u) => `tag${u}: spendReport(from: $from, to: $to, projectIds: $projects, groupBy: $tag, unit: ${u}, orderBy: AMOUNT_DESC, first: 5) { keys tasks totals { unit amount } }`).join('\n  ')}
}`;

const RANGES = [7, 30, 90];

export function Overview() {
  const { viewer, projectId } = useSigned();
  const [days, setDays] = useState(30);
  const [stack, setStack] = useState<'model' | 'project'>('model');
  const [tag, setTag] = useState<string | null>(null);
  const tomorrow = utcMidnight(1);
  const from = utcMidnight(1 - days);
  const variables = {
    from: from.toISOString(),
    to: tomorrow.toISOString(),
    today: utcMidnight(0).toISOString(),
    tomorrow: tomorrow.toISOString(),
    month: monthStart(0).toISOString(),
    nextMonth: monthStart(1).toISOString(),
    projects: projectId ? [projectId] : null,
    stack: ['day', stack],
  };
  const [{ data, error, fetching }] = useQuery<Record<string, Row[] | string[]>>({ query: OVERVIEW, variables });
  void loadChart(); // beside the query, not after it: the chart draws as soon as the data is in
  const tagNames = (data?.tagNames as string[] | undefined) ?? [];
  const tagName = tag && tagNames.includes(tag) ? tag : tagNames[0];
  const [tags] = useQuery<Record<string, Row[]>>({
    query: TAGS,
    variables: { from: variables.from, to: variables.to, projects: variables.projects, tag: [`tag:${tagName}`] },
    pause: !tagName,
  });

  if (error) return <p class="error" role="alert">{errorText(error)}</p>;
  if (!data) return <p class="loading">Loading…</p>;
  const rows = (name: string) => (data[name] as Row[] | undefined) ?? [];
  const first = (name: string): Money[] => rows(name)[0]?.totals ?? [];
  const ranked = (name: string, source: Record<string, Row[] | string[]> | undefined = data): Ranked[] =>
    UNITS.flatMap((u) => ((source?.[`${name}${u}`] as Row[] | undefined) ?? []).map((r) => ({ key: r.keys[0]!, tasks: r.tasks, money: r.totals[0]! })));
  const nothing = rows('range').length === 0 && rows('monthToDate').length === 0;

  return (
    <section data-ready={fetching ? undefined : 'overview'}>
      <div class="page-head">
        <h1>Overview</h1>
        <label>
          Range{' '}
          <select name="range" value={days} onChange={(e) => setDays(Number((e.target as HTMLSelectElement).value))}>
            {RANGES.map((d) => (
              <option value={d}>last {d} days</option>
            ))}
          </select>
        </label>
        <label>
          Stack by{' '}
          <select name="stack" value={stack} onChange={(e) => setStack((e.target as HTMLSelectElement).value as 'model' | 'project')}>
            <option value="model">model</option>
            {viewer.kind !== 'PROJECT_KEY' && !projectId && <option value="project">project</option>}
          </select>
        </label>
      </div>
      <div class="cards">
        <Amounts id="today" title="Today (UTC)" totals={first('today')} />
        <Amounts id="month" title="Month to date" totals={first('monthToDate')} />
        <Amounts id="range" title={`${day(from)} to ${day(utcMidnight(0))}`} totals={first('range')} />
      </div>
      {viewer.kind !== 'PROJECT_KEY' && <EarlyWarning />}
      {nothing ? (
        <Empty>
          No spend yet. Send a request through the gateway with a project key (<code>Authorization: Bearer sg_…</code>); it shows here once it settles.
        </Empty>
      ) : (
        <>
          {UNITS.filter((u) => first('range').some((m) => m.unit === u)).map((u) => (
            <SpendChart unit={u} from={from} days={days} rows={rows('series')} />
          ))}
          <div class="tops">
            <TopList id="models" title="Top models" rows={ranked('model')} />
            {viewer.kind !== 'PROJECT_KEY' && !projectId && <TopList id="projects" title="Top projects" rows={ranked('project')} />}
            <TopList id="keys" title="Top API keys" rows={ranked('apiKey')} />
            <TopList id="users" title="Top end users (this month)" rows={ranked('user')} />
            <TopList
              id="tags"
              title={
                tagNames.length ? (
                  <label>
                    Top by tag{' '}
                    <select name="tag" value={tagName} onChange={(e) => setTag((e.target as HTMLSelectElement).value)}>
                      {tagNames.map((t) => (
                        <option value={t}>{t}</option>
                      ))}
                    </select>
                  </label>
                ) : (
                  'Top tags'
                )
              }
              rows={tagName ? ranked('tag', tags.data) : []}
              empty="No tagged tasks in this range: send X-Spendgate-Tags: team=search, or issue a key with default tags."
            />
          </div>
        </>
      )}
    </section>
  );
}
