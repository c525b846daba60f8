/**
 * The overview's early warning (decisions §15): budgets at 80 % or more of their limit or whose
 * forecast passes it, soonest to run out first, and the latest spend anomalies (an hour far above its scope's usual).
 */
import { useQuery } from '@urql/preact';
import type { Unit } from '../api';
import { catalogPart, dateTime } from '../format';
import { Amount } from './amounts';
import { keyLabel, useProjects } from './project-picker';

export const EARLY = `query Early { budgetsAtRisk { budgetId projectName scope scopeValue modelScope modelValue unit period limit used usedPercent forecastSpend runsOutAt }
  anomalies(first: 5) { eventId projectName scope scopeValue hour unit spend baseline multiple } }`;

interface Risk {
  budgetId: string;
  projectName: string;
  scope: string;
  scopeValue: string | null;
  modelScope: string | null;
  modelValue: string | null;
  unit: Unit;
  period: string;
  limit: string;
  used: string;
  usedPercent: string;
  forecastSpend: string | null;
  runsOutAt: string | null;
}
interface Spike {
  eventId: string;
  projectName: string;
  scope: string;
  scopeValue: string | null;
  hour: string;
  unit: Unit;
  spend: string;
  baseline: string;
  multiple: string;
}

export interface Early {
  budgetsAtRisk: Risk[];
  anomalies: Spike[];
}

/**
 * Asked by the page beside its own query, and the page shows once both answered: a warning that
 * arrived later pushed the chart down under a reader's pointer (a click landed between bars).
 */
export function useEarlyWarning(wanted: boolean): { data: Early | undefined; answered: boolean } {
  const [{ data, error, fetching }] = useQuery<Early>({ query: EARLY, pause: !wanted });
  return { data, answered: !wanted || (!fetching && (data !== undefined || error !== undefined)) };
}

export function EarlyWarning({ data }: { data: Early | undefined }) {
  const projects = useProjects();
  const valueOf = (scope: string, value: string | null) =>
    scope === 'API_KEY' || scope === 'apiKey' ? keyLabel(projects, value) : (value ?? '');
  if (!data || (data.budgetsAtRisk.length === 0 && data.anomalies.length === 0)) return null;
  return (
    <div class="tops" data-testid="early-warning">
      {data.budgetsAtRisk.length > 0 && (
        <div class="card">
          <h2>Budgets at risk</h2>
          <table data-testid="at-risk">
            <tbody>
              {data.budgetsAtRisk.map((b) => (
                <tr>
                  <td>
                    {b.projectName}, {b.period.toLowerCase()}
                    {b.modelScope ? `, ${catalogPart(b.modelScope, b.modelValue)}` : ''}
                    {b.scope === 'PROJECT'
                      ? ''
                      : ` (${b.scope.toLowerCase().replace('_', ' ')} ${valueOf(b.scope, b.scopeValue)})`}
                  </td>
                  <td class="num" data-used-percent={b.usedPercent}>
                    <span class={Number(b.usedPercent) >= 100 ? 'error' : ''}>{b.usedPercent} %</span> of{' '}
                    <Amount amount={b.limit} unit={b.unit} />
                    {b.forecastSpend !== null && (
                      <>
                        {', forecast '}
                        <Amount amount={b.forecastSpend} unit={b.unit} />
                      </>
                    )}
                  </td>
                  <td>{b.runsOutAt ? `runs out ${dateTime(b.runsOutAt).slice(0, 10)}` : ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {data.anomalies.length > 0 && (
        <div class="card">
          <h2>Unusual spend</h2>
          <table data-testid="anomalies">
            <tbody>
              {data.anomalies.map((a) => (
                <tr>
                  <td>
                    {a.scope === 'project'
                      ? a.projectName
                      : `${a.scope === 'apiKey' ? 'key' : 'user'} ${valueOf(a.scope, a.scopeValue)} (${a.projectName})`}
                  </td>
                  <td>{dateTime(a.hour).slice(0, 16)}</td>
                  <td class="num">
                    <Amount amount={a.spend} unit={a.unit} />, {a.multiple}× the usual{' '}
                    <Amount amount={a.baseline} unit={a.unit} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
