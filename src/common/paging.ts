/** Page sizes as clients ask for them (`first`): one check and one refusal for every list. */
import { ApiError } from './api-error.js';

export function requirePageSize(first: number, max: number): void {
  if (!(Number.isInteger(first) && first >= 1 && first <= max))
    throw ApiError.badRequest(`first: must be between 1 and ${max}`);
}
