-- The sweeper's questions, answered without scanning whole tables: which
-- reservations have expired, which idempotency records are past their
-- lifetime, and whether an object in storage belongs to a file record.
CREATE INDEX quota_reservations_expires_at ON quota_reservations (expires_at);
CREATE INDEX idempotency_records_created_at ON idempotency_records (created_at);
CREATE INDEX files_backend_object_key ON files (backend, object_key);
