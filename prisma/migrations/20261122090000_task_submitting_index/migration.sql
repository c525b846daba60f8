-- Hand-written: the abandoned-submission sweep (every poll round) finds `submitting` tasks by the
-- time they last showed life. Without this partial index it read the whole task table each round;
-- the index only ever holds the few tasks whose upstream call is in flight.
-- updated_at, not accepted_at: a relayed event stream keeps its task alive by touching updated_at,
-- so a long stream is not mistaken for a gateway that died.
CREATE INDEX "task_submitting_since" ON "task" ("updated_at") WHERE "status" = 'submitting';
