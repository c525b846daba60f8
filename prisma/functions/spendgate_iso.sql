-- spendgate_iso: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261123223900_alerts_events (of 1).
CREATE OR REPLACE FUNCTION public.spendgate_iso(t timestamp with time zone)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE
AS $function$
  SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
$function$;

COMMENT ON FUNCTION public.spendgate_iso(t timestamp with time zone) IS 'An event''s timestamps and amounts as text: ISO 8601 UTC, exact decimals (never JSON numbers).';
