-- A reopened month closed again posts what its shortfall became since its last close: more (a late
-- credit lowered the spend) or less (a late charge raised it), so a true-up may be negative; never 0
-- (nothing changed: nothing is posted). Decisions §19.
ALTER TABLE commitment_true_up DROP CONSTRAINT commitment_true_up_positive;
ALTER TABLE commitment_true_up ADD CONSTRAINT commitment_true_up_not_zero CHECK (amount <> 0);
