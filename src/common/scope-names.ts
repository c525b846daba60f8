/**
 * How a person reads what a budget or a limit counts (decisions §20), the same in a 402, a 429, an
 * email and a Slack message: a budget's part of the catalog ("seedream-4.0", "video tasks") and a
 * limit's kind ("requests a minute").
 */
export function catalogPartName(modelScope: string, modelValue: string | null): string {
  return modelScope === 'KIND' ? `${modelValue} tasks` : String(modelValue);
}

export const LIMIT_KIND_NAMES: Readonly<Record<string, string>> = {
  REQUESTS_PER_MINUTE: 'requests a minute',
  TASKS_IN_FLIGHT: 'tasks in flight',
  TOKENS_PER_MINUTE: 'chat tokens a minute',
};
