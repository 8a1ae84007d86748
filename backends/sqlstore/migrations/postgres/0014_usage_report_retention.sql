-- Raw usage reports are deleted 36 days after they arrived (spend.RawRetention):
-- the oldest are found by when they arrived.
CREATE INDEX usage_reports_received ON usage_reports (received_at);
