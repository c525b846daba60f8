-- Vendor reconciliation (decisions §14): a difference is one of the named classes and states, and a
-- statement's lines are kept as read (the import writes them once, in its own transaction).
ALTER TABLE vendor_recon_item ADD CONSTRAINT vendor_recon_item_class CHECK (class IN ('amount_differs', 'billed_not_ours', 'ours_not_billed', 'duplicate', 'pending'));
ALTER TABLE vendor_recon_item ADD CONSTRAINT vendor_recon_item_state CHECK (state IN ('open', 'accepted', 'disputed'));
CREATE TRIGGER vendor_statement_line_kept BEFORE UPDATE ON vendor_statement_line FOR EACH ROW EXECUTE FUNCTION spendgate_kept_as_written();
