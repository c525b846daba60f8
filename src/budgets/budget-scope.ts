/**
 * What a budget or a limit counts (decisions §7, §20): the scope and its value as given, checked
 * and stored. One rule for both: PROJECT and EACH_USER take no value; API_KEY the key's public
 * prefix (a key of the project, stored by id); TAG name=value; USER the end user.
 */
import type { PoolClient } from 'pg';
import { canonicalTags, parseTags, parseUser } from '../attribution/attribution.js';
import { ApiError } from '../common/api-error.js';
import type { BudgetScope } from '../ledger/ledger.service.js';

/** A scope as stored: the key's id for API_KEY, the canonical value for TAG and USER. */
export interface StoredScope {
  scope: BudgetScope;
  keyId: string | null;
  value: string | null;
}

/** Checks a scope and its value, naming the argument that is wrong; an API key must be the project's. */
export async function storedScope(
  client: Pick<PoolClient, 'query'>,
  input: { projectId: string; scope?: BudgetScope; scopeValue?: string },
  noun: 'budget' | 'limit',
): Promise<StoredScope> {
  const scope = input.scope ?? 'PROJECT';
  const value = input.scopeValue ?? undefined;
  const none = (why: string) => {
    if (value !== undefined) throw ApiError.badRequest(`scopeValue: ${why}`);
  };
  switch (scope) {
    case 'PROJECT':
      none(`a PROJECT ${noun} counts the whole project and takes no scopeValue`);
      return { scope, keyId: null, value: null };
    case 'EACH_USER':
      none(`an EACH_USER ${noun} gives every end user the limit on their own and takes no scopeValue`);
      return { scope, keyId: null, value: null };
    case 'API_KEY': {
      if (value === undefined)
        throw ApiError.badRequest(
          `scopeValue: an API_KEY ${noun} needs the key's public prefix (the 12 hex characters after sg_)`,
        );
      const key = await client.query<{ id: string }>('SELECT id FROM api_key WHERE prefix = $1 AND project_id = $2', [
        value.trim(),
        input.projectId,
      ]);
      if (!key.rows[0])
        throw ApiError.badRequest(`scopeValue: no API key with prefix "${value.slice(0, 20)}" in this project`);
      return { scope, keyId: key.rows[0].id, value: null };
    }
    case 'TAG': {
      if (value === undefined)
        throw ApiError.badRequest(`scopeValue: a TAG ${noun} needs the tag it counts, as name=value`);
      return { scope, keyId: null, value: canonicalTags(parseTags([value], 'scopeValue'))[0]! };
    }
    case 'USER':
      if (value === undefined) throw ApiError.badRequest(`scopeValue: a USER ${noun} needs the end user it counts`);
      return { scope, keyId: null, value: parseUser(value, 'scopeValue')! };
  }
}
