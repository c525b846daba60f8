-- Hand-written. One priced line (component, quantity × rate / per = amount), every figure NUMERIC:
-- the type of task.estimate_lines, added by the next migration (Prisma knows it only as
-- Unsupported, so it cannot create it).
CREATE TYPE spendgate_line AS (component text, quantity numeric, rate numeric, per numeric, amount numeric);
