ALTER TABLE events DROP COLUMN sent_as;
ALTER TABLE delivery_attempts DROP COLUMN signature;
