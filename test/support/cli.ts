/**
 * `spendgate …` (dist/src/cli/main.js) as a child process, with only PATH and `env` in its
 * environment. Asynchronous, so that the test's own gateway keeps answering meanwhile: a blocked
 * event loop lets its idle keep-alive connections time out under the next request (ECONNRESET).
 */
import { execFile } from 'node:child_process';

export function spendgate(env: Record<string, string>, ...args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) =>
    execFile(
      process.execPath,
      ['dist/src/cli/main.js', ...args],
      { env: { PATH: process.env.PATH, ...env } },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? -1) : 0, out: `${stdout}${stderr}` }),
    ),
  );
}
