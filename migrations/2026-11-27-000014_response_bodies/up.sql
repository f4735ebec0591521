-- A receiver may answer any bytes. What is stored of them is text without NUL (see the domain's
-- ResponseExcerpt); this says whether it had to be made so: the body was not UTF-8 text, or held
-- NUL, and what could not be shown is U+FFFD.
ALTER TABLE delivery_attempts ADD COLUMN response_excerpt_lossy boolean NOT NULL DEFAULT false;
