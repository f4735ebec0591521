DELETE FROM timetrack_functions WHERE signature = :signature
