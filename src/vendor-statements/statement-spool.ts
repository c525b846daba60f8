/**
 * A vendor statement's body on its way to the import: spooled to a temporary file at the network's
 * pace, or read and dropped when the import is refused. The gateway's main thread does both for
 * POST /reports/vendor-statements (reads/statement-upload.ts) once the reads worker has said the caller may
 * import: the worker runs at the lowest priority, and a statement that had to pass through it while
 * the machine was busy could not arrive within REQUEST_TIMEOUT_MS (a 200 MB body under two busy
 * loops on 2 cores answered 408 instead of its 400). The worker then reads the file the main thread
 * names in SPOOLED_STATEMENT, a header the main thread removes from every client's request.
 */
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ApiError } from '../common/api-error.js';

export const MAX_STATEMENT_BYTES = 1 << 30;

/** Where the main thread says it spooled the body (never taken from a client: reads-thread.ts strips it). */
export const SPOOLED_STATEMENT = 'x-spendgate-spooled-statement';

/** Where a statement is posted (VendorStatementsController). */
export const STATEMENT_IMPORT = '/reports/vendor-statements';

/** The path the worker asks first: may this caller import, with this mapping? 204 or the refusal. */
export const STATEMENT_IMPORT_CHECK = '/__reads/statement-import-allowed';

const PREFIX = 'spendgate-statement-';

export interface Spooled {
  dir: string;
  file: string;
}

/**
 * The body to a temporary file; over 1 GiB: 413 (the rest read and dropped, so the client hears it). A
 * body cut off is the client's to send again (400); a temporary directory that cannot be made or
 * written (a full or read-only disk) is this gateway's fault, not the statement's (503).
 */
export async function spool(body: Readable, under?: string): Promise<Spooled> {
  const dir = await mkdtemp(path.join(spoolRoot(under), PREFIX)).catch((error: Error) => {
    throw unstorable(error);
  });
  const file = path.join(dir, 'statement.csv');
  const out = createWriteStream(file);
  // The file's own failure (a system call on it), not the body's error that pipeline passes on to it.
  let diskError: Error | undefined;
  out.on('error', (error: NodeJS.ErrnoException) => {
    if (!diskError && FILE_CALLS.has(error.syscall ?? '')) diskError = error;
  });
  let size = 0;
  const limit = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      size += chunk.length;
      done(null, size > MAX_STATEMENT_BYTES ? undefined : chunk);
    },
  });
  try {
    await pipeline(body, limit, out);
  } catch {
    await rm(dir, { recursive: true, force: true });
    if (diskError) throw unstorable(diskError);
    throw new ApiError(400, 4000, 'the statement did not arrive whole: send it again');
  }
  if (size > MAX_STATEMENT_BYTES) {
    await rm(dir, { recursive: true, force: true });
    throw new ApiError(
      413,
      4130,
      'a statement is at most 1 GiB: split it (rows an earlier statement holds are skipped as repeated)',
    );
  }
  return { dir, file };
}

/** Where spools are made and looked for: STATEMENT_SPOOL_DIR, else the system's temporary directory. */
const spoolRoot = (under: string | undefined) => path.resolve(under ?? os.tmpdir());

const FILE_CALLS = new Set(['open', 'write', 'writev', 'close', 'fsync']);

/** Says the system error's code, never its message: that names local paths. */
function unstorable(error: Error): ApiError {
  const code = (error as NodeJS.ErrnoException).code ?? 'unknown';
  return ApiError.serviceUnavailable(
    `this gateway cannot store a statement for its import now (${code} on its statement spool directory, STATEMENT_SPOOL_DIR): nothing was imported; send it again later`,
  );
}

/** The file a SPOOLED_STATEMENT header names, if it is one spool() made (anything else is ignored). */
export function spooledFile(header: string | string[] | undefined, under?: string): string | undefined {
  if (typeof header !== 'string') return undefined;
  const dir = path.dirname(header);
  const ok =
    path.dirname(dir) === spoolRoot(under) &&
    new RegExp(`^${PREFIX}[A-Za-z0-9]{6}$`).test(path.basename(dir)) &&
    path.basename(header) === 'statement.csv';
  return ok ? header : undefined;
}

/** Reads and drops what is left of a refused body, up to 1 GiB (the request timeout bounds the time). */
export async function discard(body: Readable): Promise<void> {
  if (body.readableEnded || body.destroyed) return;
  let left = 1 << 30;
  await new Promise<void>((resolve) => {
    body.on('data', (chunk: Buffer) => {
      left -= chunk.length;
      if (left < 0) body.destroy();
    });
    body
      .once('end', resolve)
      .once('close', resolve)
      .once('error', () => resolve());
    body.resume();
  });
}
