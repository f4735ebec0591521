DROP TABLE rate_limit_hits;
