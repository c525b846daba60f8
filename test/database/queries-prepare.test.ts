/**
 * Every query the gateway sends, prepared against the migrated schema: a column renamed or dropped
 * by a migration, a function whose arguments changed, a typo in a table's name fails here, in one
 * place, instead of in the one test (or the one production path) that happens to run that query.
 *
 * The queries are read from the source (the SQL text given to `query` or `prepared`, each
 * `${NAME}` of a module constant put in); PREPARE parses and plans each one without running it.
 * A query built per call (a filter's clauses) cannot be read this way: those are listed by file,
 * and the list must not grow without a look (they are exercised through the edges instead).
 */
import { readdirSync, readFileSync } from 'node:fs';
import pg from 'pg';
import ts from 'typescript';
import { freshDatabase } from '../support/harness.js';

interface Found {
  where: string;
  sql?: string;
}

/** Module constants that hold SQL text (`const COLUMNS = '...'`), resolved through each other. */
function constants(file: ts.SourceFile): Map<string, ts.Expression> {
  const out = new Map<string, ts.Expression>();
  const visit = (node: ts.Node) => {
    if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.initializer)
      out.set(node.name.text, node.initializer);
    ts.forEachChild(node, visit);
  };
  visit(file);
  return out;
}

function text(node: ts.Expression, consts: Map<string, ts.Expression>, depth = 0): string | undefined {
  if (depth > 5) return undefined;
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
  if (ts.isParenthesizedExpression(node)) return text(node.expression, consts, depth + 1);
  if (ts.isIdentifier(node)) {
    const init = consts.get(node.text);
    return init ? text(init, consts, depth + 1) : undefined;
  }
  if (ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.PlusToken) {
    const left = text(node.left, consts, depth + 1);
    const right = text(node.right, consts, depth + 1);
    return left !== undefined && right !== undefined ? left + right : undefined;
  }
  if (ts.isTemplateExpression(node)) {
    let out = node.head.text;
    for (const span of node.templateSpans) {
      const part = text(span.expression, consts, depth + 1);
      if (part === undefined) return undefined;
      out += part + span.literal.text;
    }
    return out;
  }
  return undefined;
}

/**
 * Every `x.query(sql, …)` (queryArrays, queryTexts too) and `x.prepared(name, sql, …)` in src/, but the database's own
 * plumbing (migrations, dumps).
 */
function queriesInSource(): Found[] {
  const found: Found[] = [];
  const files = (readdirSync('src', { recursive: true }) as string[]).filter(
    (f) => f.endsWith('.ts') && !f.startsWith('database/'),
  );
  for (const name of files) {
    const file = ts.createSourceFile(name, readFileSync(`src/${name}`, 'utf8'), ts.ScriptTarget.Latest, true);
    const consts = constants(file);
    const visit = (node: ts.Node) => {
      if (
        ts.isCallExpression(node) &&
        ts.isPropertyAccessExpression(node.expression) &&
        ['query', 'prepared', 'queryArrays', 'queryTexts'].includes(node.expression.name.text)
      ) {
        const arg = node.expression.name.text === 'prepared' ? node.arguments[1] : node.arguments[0];
        // `query(config)` objects and calls of other things named query (a GraphQL client's) are not SQL text.
        if (arg && !ts.isObjectLiteralExpression(arg)) {
          const where = `src/${name}:${file.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
          const sql = text(arg, consts);
          if (sql === undefined || /\b(SELECT|INSERT|UPDATE|DELETE|WITH|LOCK|SET|SHOW|VALUES|CALL)\b/i.test(sql))
            found.push(sql === undefined ? { where } : { where, sql });
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(file);
  }
  return found;
}

let client: pg.Client;
beforeAll(async () => {
  client = new pg.Client({ connectionString: await freshDatabase() });
  await client.connect();
}, 60_000);
afterAll(() => client.end());

test('every query read from the source prepares against the migrated schema', async () => {
  const all = queriesInSource();
  const readable = all.filter((q): q is Required<Found> => q.sql !== undefined);
  expect(readable.length).toBeGreaterThan(170);
  const failures: string[] = [];
  // One transaction per file, its queries in source order (a temporary table made by one is read by
  // the next), each under a savepoint so that one failure does not hide the rest.
  const files = [...new Set(readable.map((q) => q.where.replace(/:\d+$/, '')))];
  for (const file of files) {
    await client.query('BEGIN');
    for (const [i, q] of readable.entries()) {
      if (q.where.replace(/:\d+$/, '') !== file) continue;
      // Utility statements (LOCK, SET, CREATE TEMP TABLE … AS) cannot be prepared: they run, parameters as NULL, and
      // are undone.
      const utility = /^\s*(LOCK|SET|SHOW|CREATE)\b/i.test(q.sql);
      await client.query('SAVEPOINT q');
      try {
        await client.query(utility ? q.sql.replace(/\$\d+/g, 'NULL') : `PREPARE q${i} AS ${q.sql}`);
        await client.query('RELEASE SAVEPOINT q');
      } catch (error) {
        failures.push(`${q.where}: ${(error as Error).message}\n    ${q.sql.replace(/\s+/g, ' ').slice(0, 160)}`);
        await client.query('ROLLBACK TO SAVEPOINT q');
      }
    }
    await client.query('ROLLBACK');
    await client.query('DEALLOCATE ALL');
  }
  expect(failures).toEqual([]);
});

test("SQL is sent from a capability's services and data files: never from a resolver, a controller or the CLI", () => {
  const senders = [...new Set(queriesInSource().map((q) => q.where.replace(/:\d+$/, '')))];
  expect(senders.length).toBeGreaterThan(20);
  expect(senders.filter((f) => /\.(resolver|controller)\.ts$/.test(f) || f.startsWith('src/cli/'))).toEqual([]);
});

test('queries built per call are few, and named', () => {
  const built = queriesInSource()
    .filter((q) => q.sql === undefined)
    .map((q) => q.where.replace(/:\d+$/, ''));
  const byFile = Object.fromEntries([...new Set(built)].sort().map((f) => [f, built.filter((b) => b === f).length]));
  console.log(`queries built per call (exercised through the edges): ${JSON.stringify(byFile)}`);
  expect(built.length).toBeLessThanOrEqual(15);
});
