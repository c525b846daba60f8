/**
 * spendReport's answer through the report cache (decisions §22). The rows are written as JSON once
 * (graphql/answered-directly.ts), or kept as rows where no writer serves the selection. A report
 * grouped by project first, in the order of its keys and whole, is kept project by project: a
 * settlement in one project recomputes that project's rows alone, and the answer is the parts
 * joined in name order (the order the report's keys sort in).
 */
import type { GraphQLResolveInfo } from 'graphql';
import { writeDirectly } from '../graphql/answered-directly.js';
import { selectionKey } from '../report-cache/graphql-answers.js';
import { arrivalOf, type CachedAnswer, type ReportCache } from '../report-cache/report-cache.service.js';
import type { SpendRow } from '../graphql/graphql.types.js';
import type { ReportsService } from './reports.service.js';
import type { ReportQuery } from './spend-report.js';
import { mergeUnits } from './merge-units.js';

/** What a report part is kept as: rows, or their JSON as written. */
type SpendPart = SpendRow[] | Buffer;
/** The answer: rows, or JSON in pieces that follow each other (the parts' bytes themselves, not copies). */
export type SpendAnswer = SpendRow[] | { json: readonly Buffer[] };

const asAnswer = (part: SpendPart): SpendAnswer => (Buffer.isBuffer(part) ? { json: [part] } : part);

export async function spendAnswer(
  cache: ReportCache,
  reports: ReportsService,
  ctx: object,
  info: GraphQLResolveInfo | undefined,
  query: ReportQuery,
  direct: boolean,
): Promise<CachedAnswer<SpendAnswer>> {
  // The form is fixed before anything is computed: written JSON when a writer serves this selection.
  const json = direct && info !== undefined && writeDirectly(info, []) !== undefined;
  const form = (rows: SpendRow[]): SpendPart => (json ? writeDirectly(info!, rows)! : rows);
  const scope = { projectIds: query.projectIds, from: query.from, to: query.to };
  const shape = { ...query, projectIds: undefined };
  const selection = info ? selectionKey(info) : '';
  const arrivedAt = arrivalOf(ctx);
  if (query.groupBy[0] === 'project' && query.orderBy !== 'amount' && query.first === undefined) {
    // A project's rows are the same whoever asks: the parts are shared by every scope that holds them.
    const byProject = await cache.answerByProject<SpendPart, SpendAnswer>(
      ctx,
      arrivedAt,
      `spendReport by project ${JSON.stringify(shape)} ${json} ${selection}`,
      scope,
      {
        all: async () => {
          const byName = new Map<string, SpendRow[]>();
          for (const row of mergeUnits(await reports.spend(query))) {
            const name = row.keys[0]!;
            const rows = byName.get(name);
            if (rows) rows.push(row);
            else byName.set(name, [row]);
          }
          return new Map([...byName].map(([name, rows]) => [name, form(rows)]));
        },
        one: async (projectId) => form(mergeUnits(await reports.spend({ ...query, projectIds: [projectId] }))),
        empty: form([]),
        join: (parts) => (json ? { json: joinJsonArrays(parts as Buffer[]) } : (parts as SpendRow[][]).flat()),
      },
    );
    if (byProject) return byProject;
  }
  const key = `spendReport ${JSON.stringify({ ...query, projectIds: query.projectIds?.toSorted() })} ${json} ${selection}`;
  const whole = await cache.answer<SpendPart>(ctx, arrivedAt, key, scope, async () =>
    form(mergeUnits(await reports.spend(query))),
  );
  return { ...whole, value: asAnswer(whole.value) };
}

/**
 * JSON arrays' elements in one array, in order: `[a,b]`, `[]`, `[c]` → `[a,b,c]`, as pieces that follow
 * each other: views of the parts' own bytes between brackets and commas, nothing copied (a month's
 * report is megabytes, joined anew whenever one project's part changes).
 */
export function joinJsonArrays(parts: Buffer[]): Buffer[] {
  const pieces: Buffer[] = [OPEN];
  for (const part of parts) {
    if (part.length <= 2) continue; // []
    if (pieces.length > 1) pieces.push(COMMA);
    pieces.push(part.subarray(1, part.length - 1));
  }
  pieces.push(CLOSE);
  return pieces;
}

const OPEN = Buffer.from('[');
const COMMA = Buffer.from(',');
const CLOSE = Buffer.from(']');
