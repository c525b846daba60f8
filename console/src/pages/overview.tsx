/**
 * Overview: today, month to date and the chosen range per unit (credits and USD never summed), the
 * range against the previous period, spend per day stacked by model or project, and the top
 * models, projects, keys, users and tags. The range lives in the URL (?from=&to=), every figure
 * is an exact string from spendReport, a bar or a row opens its tasks, and what is on screen
 * downloads as CSV or FOCUS with the session's own credentials (a same-origin link: no token).
 * The figures show as soon as they are in (data-ready); the previous period's beside the top
 * lists and the tag list follow in a second request (data-compared).
 */
import { useQuery } from '@urql/preact';
import { errorText, type Money, type Unit } from '../api';
import { useSigned } from '../signed';
import type { Viewer } from '../viewer';
import { ADJUSTMENT, ADJUSTMENT_LABEL, day, modelLabel, monthStart, UNITS, utcMidnight } from '../format';
import { href, setParams, useRoute } from '../route';
import { isWholeMonths, previousOf, rangeFromParams, rangeLabel, rangeOf, type DayRange } from '../range';
import { Amounts } from '../parts/amounts';
import { ConvertedTotal } from '../parts/converted-total';
import { loadChart, SpendChart } from '../parts/spend-chart';
import { TopList, type Ranked } from '../parts/top-list';
import { Empty } from '../parts/empty';
import { ComputedAt, type BooksExtension } from '../parts/computed-at';
import { EarlyWarning, useEarlyWarning } from '../parts/early-warning';
import { RangePicker } from '../parts/range-picker';
import { keyLabel, useProjects } from '../parts/project-picker';
import { usePrevious, type Dimension } from '../parts/previous-tops';

interface Row {
  keys: string[];
  /** In digits: a year's tasks can pass GraphQL's Int (tasks is capped there). */
  tasksExact: string;
  totals: Money[];
}

const TOP = (alias: string, dim: string, unit: Unit, range = '$from, to: $to') =>
  `${alias}${unit}: spendReport(from: ${range}, projectIds: $projects, groupBy: ["${dim}"], unit: ${unit}, orderBy: AMOUNT_DESC, first: 5) { keys tasksExact totals { unit amount } }`;

const OVERVIEW = `query Overview($from: DateTime!, $to: DateTime!, $pfrom: DateTime!, $pto: DateTime!, $today: DateTime!, $tomorrow: DateTime!, $month: DateTime!, $ufrom: DateTime!, $uto: DateTime!, $projects: [ID!], $stack: [String!]!) {
  today: spendReport(from: $today, to: $tomorrow, projectIds: $projects, first: 1) { tasks totals { unit amount } }
  monthToDate: spendReport(from: $month, to: $tomorrow, projectIds: $projects, first: 1) { tasks totals { unit amount } }
  range: spendReport(from: $from, to: $to, projectIds: $projects, first: 1) { tasks totals { unit amount } }
  previous: spendReport(from: $pfrom, to: $pto, projectIds: $projects, first: 1) { tasks totals { unit amount } }
  series: spendReport(from: $from, to: $to, projectIds: $projects, groupBy: $stack) { keys totals { unit amount } }
  tagNames(from: $from, to: $to, projectIds: $projects)
  ${UNITS.flatMap((u) => [TOP('model', 'model', u), TOP('project', 'project', u), TOP('apiKey', 'apiKey', u), TOP('user', 'user', u, '$ufrom, to: $uto')]).join('\n  ')}
}`;

const TAGS = `query TopTags($from: DateTime!, $to: DateTime!, $projects: [ID!], $tag: [String!]!) {
  ${UNITS.map((u) => `tag${u}: spendReport(from: $from, to: $to, projectIds: $projects, groupBy: $tag, unit: ${u}, orderBy: AMOUNT_DESC, first: 5) { keys tasksExact totals { unit amount } }`).join('\n  ')}
}`;

/** The users' range: user reports are month-aligned, so the range itself when it is whole months, else this month. */
function usersRange(range: DayRange): DayRange {
  return isWholeMonths(range) ? range : rangeOf(day(monthStart(0)), day(utcMidnight(-1, monthStart(1))));
}

/**
 * What the overview asks for at this address, for this caller: first-queries.ts sends the same request
 * before the page renders, and urql shares it by its key (query and variables), so it goes out once.
 */
export function overviewRequest(params: URLSearchParams, viewer: Viewer, projectId: string | null) {
  const { range, problem } = rangeFromParams(params);
  const previous = previousOf(range);
  const users = usersRange(range);
  const stack = params.get('stack') === 'project' && viewer.kind !== 'PROJECT_KEY' && !projectId ? 'project' : 'model';
  const variables = {
    from: range.start.toISOString(),
    to: range.end.toISOString(),
    pfrom: previous.start.toISOString(),
    pto: previous.end.toISOString(),
    today: utcMidnight(0).toISOString(),
    tomorrow: utcMidnight(1).toISOString(),
    month: monthStart(0).toISOString(),
    ufrom: users.start.toISOString(),
    uto: users.end.toISOString(),
    projects: projectId ? [projectId] : null,
    stack: ['day', stack],
  };
  return { query: OVERVIEW, variables, range, problem, previous, users, stack };
}

export function Overview() {
  const { viewer, projectId } = useSigned();
  const { params } = useRoute();
  const request = overviewRequest(params, viewer, projectId);
  const { variables, range, problem, previous, users, stack } = request;
  const tag = params.get('tag');
  const projects = useProjects();
  const [{ data, error, fetching, extensions }] = useQuery<Record<string, Row[] | string[]>>({
    query: request.query,
    variables,
  });
  const early = useEarlyWarning(viewer.kind !== 'PROJECT_KEY');
  void loadChart(); // beside the query, not after it: the chart draws as soon as the data is in
  const tagNames = (data?.tagNames as string[] | undefined) ?? [];
  const tagName = tag && tagNames.includes(tag) ? tag : tagNames[0];
  const [tags] = useQuery<Record<string, Row[]>>({
    query: TAGS,
    variables: { from: variables.from, to: variables.to, projects: variables.projects, tag: [`tag:${tagName}`] },
    pause: !tagName,
  });
  const rowsOf = (name: string, source: Record<string, Row[] | string[]> | undefined = data) =>
    UNITS.flatMap((u) => (source?.[`${name}${u}`] as Row[] | undefined) ?? []);
  const shown: Record<Dimension, string[]> = {
    model: rowsOf('model').map((r) => r.keys[0]!),
    project: rowsOf('project')
      .map((r) => projects.find((p) => p.name === r.keys[0])?.id)
      .filter((id): id is string => !!id),
    apiKey: rowsOf('apiKey').map((r) => r.keys[0]!),
    user: rowsOf('user').map((r) => r.keys[0]!),
    tag: tagName
      ? rowsOf('tag', tags.data)
          .map((r) => `${tagName}=${r.keys[0]!}`)
          .filter((t) => !t.endsWith('=(none)'))
      : [],
  };
  const before = usePrevious(shown, previous, previousOf(users), variables.projects, tagName);

  if (error)
    return (
      <p class="error" role="alert">
        {errorText(error)}
      </p>
    );
  if (!data || !early.answered) return <p class="loading">Loading…</p>;
  const rows = (name: string) => (data[name] as Row[] | undefined) ?? [];
  const first = (name: string): Money[] => rows(name)[0]?.totals ?? [];
  const project = projectId ? projects.find((p) => p.id === projectId) : undefined;
  // A bar or a row opens the tasks whose money it counts: posted in its days (decisions §9, §13).
  const base = { from: range.from, to: range.to, project: projectId, posted: 'yes' };
  const tasksOf = (extra: Record<string, string>, r: DayRange = range) =>
    href('tasks', { ...base, from: r.from, to: r.to, ...extra });
  const ranked = (
    name: Dimension,
    link: (key: string) => string | null,
    label: (key: string) => string = (k) => k,
    source = data,
  ): Ranked[] =>
    rowsOf(name, source).map((r) => {
      const key = r.keys[0]!;
      const money = r.totals[0]!;
      return {
        key,
        label: label(key),
        tasks: r.tasksExact,
        money,
        href: link(key),
        previous: before.amountOf(name, key, money.unit),
      };
    });
  const projectIdOf = (name: string) => projects.find((p) => p.name === name)?.id;
  const nothing = rows('range').length === 0 && rows('monthToDate').length === 0;
  const query = new URLSearchParams({
    from: variables.from,
    to: variables.to,
    ...(projectId ? { projectIds: projectId } : {}),
  });
  const fileName = (kind: string) =>
    `${kind}-${range.from}-to-${range.to}${project ? `-${project.name.replace(/[^\w.-]+/g, '_')}` : ''}.csv`;

  return (
    <section
      data-ready={fetching ? undefined : 'overview'}
      data-compared={!fetching && before.ready && (!tagName || tags.data) ? 'yes' : undefined}
    >
      <div class="page-head">
        <h1>Overview</h1>
        <RangePicker range={range} />
        <label>
          Stack by{' '}
          <select
            name="stack"
            value={stack}
            onChange={(e) => setParams({ stack: (e.target as HTMLSelectElement).value })}
          >
            <option value="model">model</option>
            {viewer.kind !== 'PROJECT_KEY' && !projectId && <option value="project">project</option>}
          </select>
        </label>
        <span class="downloads">
          <a
            class="button"
            data-testid="download-csv"
            href={`/reports/spend.csv?${query}&groupBy=day,${stack}`}
            download={fileName('spend')}
          >
            Download CSV
          </a>
          <a
            class="button"
            data-testid="download-focus"
            href={`/reports/focus.csv?${query}`}
            download={fileName('focus')}
          >
            Download FOCUS
          </a>
        </span>
      </div>
      <ComputedAt books={extensions?.books as BooksExtension | undefined} />
      {problem && (
        <p class="error" role="alert">
          {problem}
        </p>
      )}
      {before.error && (
        <p class="error" role="alert">
          The previous period could not be read: {before.error}
        </p>
      )}
      <div class="cards">
        <Amounts id="today" title="Today (UTC)" totals={first('today')} />
        <Amounts id="month" title="Month to date" totals={first('monthToDate')} />
        <Amounts id="range" title={rangeLabel(range)} totals={first('range')} previous={first('previous')} />
      </div>
      {viewer.kind !== 'PROJECT_KEY' && <EarlyWarning data={early.data} />}
      {nothing ? (
        <Empty>
          No spend yet. Send a request through the gateway with a project key (<code>Authorization: Bearer sg_…</code>);
          it shows here once it settles.
        </Empty>
      ) : (
        <>
          {UNITS.filter((u) => first('range').some((m) => m.unit === u)).map((u) => (
            <SpendChart
              unit={u}
              from={range.start}
              days={range.days}
              rows={rows('series')}
              link={(d, key) =>
                key === ADJUSTMENT_LABEL || / others$/.test(key)
                  ? null
                  : stack === 'model'
                    ? tasksOf({ model: key, from: d, to: d })
                    : projectIdOf(key)
                      ? tasksOf({ project: projectIdOf(key)!, from: d, to: d })
                      : null
              }
            />
          ))}
          <div class="tops">
            <TopList
              id="models"
              title="Top models"
              rows={ranked('model', (k) => (k === ADJUSTMENT ? null : tasksOf({ model: k })), modelLabel)}
            />
            {viewer.kind !== 'PROJECT_KEY' && !projectId && (
              <TopList
                id="projects"
                title="Top projects"
                rows={ranked('project', (k) => (projectIdOf(k) ? tasksOf({ project: projectIdOf(k)! }) : null))}
              />
            )}
            <TopList
              id="keys"
              title="Top API keys"
              rows={ranked(
                'apiKey',
                (k) => tasksOf({ key: k }),
                (k) => (k === '(none)' ? 'no key' : keyLabel(projects, k)),
              )}
            />
            <TopList
              id="users"
              title={`Top end users (${rangeLabel(users)})`}
              rows={ranked('user', (k) => tasksOf({ user: k }, users))}
            />
            <TopList
              id="tags"
              title={
                tagNames.length ? (
                  <label>
                    Top by tag{' '}
                    <select
                      name="tag"
                      value={tagName}
                      onChange={(e) => setParams({ tag: (e.target as HTMLSelectElement).value })}
                    >
                      {tagNames.map((t) => (
                        <option value={t}>{t}</option>
                      ))}
                    </select>
                  </label>
                ) : (
                  'Top tags'
                )
              }
              rows={
                tagName
                  ? ranked(
                      'tag',
                      (k) => (k === '(none)' ? null : tasksOf({ tag: `${tagName}=${k}` })),
                      (k) => k,
                      tags.data,
                    )
                  : []
              }
              empty="No tagged tasks in this range: send X-Spendgate-Tags: team=search, or issue a key with default tags."
            />
          </div>
          {/* Last: it comes with its own query, and nothing may arrive later above what a person points at. */}
          <ConvertedTotal from={variables.from} to={variables.to} projects={variables.projects} />
        </>
      )}
    </section>
  );
}
