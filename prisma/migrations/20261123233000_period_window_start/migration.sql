-- One definition of where a budget period starts: spendgate_period_window takes its start from
-- spendgate_period_start (20261123221600_user_rollup_ledger), which the hold inlines, instead of
-- a second copy of the same CASE. Same windows as before.
CREATE OR REPLACE FUNCTION spendgate_period_window(p "Period", at timestamptz, OUT period_start timestamptz, OUT period_end timestamptz)
LANGUAGE sql IMMUTABLE AS $$
  SELECT w.s, CASE p
                WHEN 'DAILY' THEN ((w.s AT TIME ZONE 'UTC') + interval '1 day') AT TIME ZONE 'UTC'
                WHEN 'WEEKLY' THEN ((w.s AT TIME ZONE 'UTC') + interval '1 week') AT TIME ZONE 'UTC'
                WHEN 'MONTHLY' THEN ((w.s AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC'
                ELSE timestamptz '10000-01-01 00:00:00+00'
              END
  FROM (SELECT spendgate_period_start(p, at) AS s) w;
$$;
