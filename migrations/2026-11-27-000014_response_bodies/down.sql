ALTER TABLE delivery_attempts DROP COLUMN response_excerpt_lossy;
