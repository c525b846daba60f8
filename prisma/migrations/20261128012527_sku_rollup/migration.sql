-- CreateTable
CREATE TABLE "spend_rollup_sku" (
    "period" DATE NOT NULL,
    "project_id" UUID NOT NULL,
    "key_prefix" TEXT NOT NULL,
    "model" TEXT NOT NULL,
    "unit" "Unit" NOT NULL,
    "price_book_version" INTEGER NOT NULL,
    "component" TEXT NOT NULL,
    "tier" TEXT NOT NULL,
    "rate" DECIMAL NOT NULL,
    "per" DECIMAL NOT NULL,
    "list_rate" DECIMAL NOT NULL,
    "lines" INTEGER NOT NULL DEFAULT 0,
    "quantity" DECIMAL NOT NULL DEFAULT 0,
    "amount" DECIMAL NOT NULL DEFAULT 0,
    "list_amount" DECIMAL NOT NULL DEFAULT 0,

    CONSTRAINT "spend_rollup_sku_pkey" PRIMARY KEY ("period","project_id","key_prefix","model","unit","price_book_version","component","tier","rate","per")
);

-- Hand-written: the charge lines already settled, rolled up as spendgate_settle now does for each
-- new one. A task's day is its settlement's posting day (the day its charge or release entry was
-- posted, as spend_rollup_by has it; the last release, as a
-- month's close carries open holds over with a release and a new hold); a task with neither entry moved no money and is dated by its
-- settlement. Months archived before this migration have no charge lines left: their FOCUS rows
-- keep the roll-up's grain (src/reports/focus-grain.ts).
INSERT INTO spend_rollup_sku (period, project_id, key_prefix, model, unit, price_book_version, component, tier,
                              rate, per, list_rate, lines, quantity, amount, list_amount)
SELECT (coalesce(e.at, t.settled_at) AT TIME ZONE 'UTC')::date, t.project_id, coalesce(k.prefix, ''), t.model, t.unit,
       t.price_book_version, c.component, coalesce(t.charge_tier, ''), c.rate, c.per, coalesce(c.list_rate, c.rate),
       count(*)::int, sum(c.quantity), sum(c.amount), sum(coalesce(c.list_amount, c.amount))
FROM charge_line c
JOIN task t ON t.id = c.task_id
LEFT JOIN api_key k ON k.id = t.api_key_id
LEFT JOIN LATERAL (SELECT coalesce(max(le.effective_at) FILTER (WHERE le.kind = 'charge'),
                                   max(le.effective_at) FILTER (WHERE le.kind = 'release')) AS at
                   FROM ledger_entry le WHERE le.task_id = t.id) e ON true
WHERE t.price_book_version IS NOT NULL AND t.settled_at IS NOT NULL -- (charge lines come with a settlement; a test may write them alone)
GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11;
