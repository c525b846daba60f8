-- An archive reads a partition with COPY (src/history/archive-files.ts, copyPartitions): PostgreSQL
-- writes the rows as CSV straight into the file DuckDB reads, instead of pages of text arrays that
-- node turned into CSV (an 833k-task month: 50 s for its tasks that way, bench/FINDINGS.md).
-- The paging function goes.
DROP FUNCTION IF EXISTS public.spendgate_archive_page(text, text[], integer);
