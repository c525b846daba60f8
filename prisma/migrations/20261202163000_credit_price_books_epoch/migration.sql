-- The FOCUS export prices credit rows at the credit price in force for their month (decisions §19), and
-- it is a cached answer (§22): a credit price published changes it for its month and the months after,
-- so it advances the epoch every cached answer is stamped with, as a commitment does.
CREATE TRIGGER credit_price_books_epoch AFTER INSERT OR DELETE OR UPDATE ON credit_price
  FOR EACH STATEMENT EXECUTE FUNCTION spendgate_books_epoch();
