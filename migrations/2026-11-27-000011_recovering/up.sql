-- A webhook that answered again after a streak of at least five failures, while its waiting
-- retries are being brought forward: the time of that success. The retries waiting since before
-- it are made due a bounded number per recording round, not all in one statement (12,000 of
-- them in one update held a round, and every other webhook's deliveries behind it, for
-- 370 ms). NULL otherwise.
ALTER TABLE webhook_subscriptions ADD COLUMN recovered_at timestamptz;
