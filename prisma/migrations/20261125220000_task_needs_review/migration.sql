-- The review queue's count and list (the console shows the count in its navigation on every page):
-- the few tasks flagged for review, newest first, without reading every task. Few rows enter it
-- (only flagged tasks), so a submission pays nothing for it.
CREATE INDEX task_needs_review ON task (id DESC) WHERE needs_review;
