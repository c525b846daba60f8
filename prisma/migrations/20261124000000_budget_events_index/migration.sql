-- The console's budgets page lists a budget's recent refusals: its budget.exhausted events, whose
-- cause starts with 'exhausted:<budget id>:'. A pattern index lets that prefix be found without
-- reading every event (events are rare: one per threshold, refusal period or review).
CREATE INDEX outbox_event_cause_prefix ON outbox_event (cause text_pattern_ops);
