DROP INDEX deliveries_requeued_idx;
