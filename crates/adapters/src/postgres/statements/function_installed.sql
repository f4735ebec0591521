-- Notes what `signature` (the functions' schema) is installed with: the hash `sha256` of its text.
INSERT INTO timetrack_functions (signature, sha256, applied_at)
VALUES (:signature, :sha256, now())
ON CONFLICT (signature) DO UPDATE SET sha256 = :sha256, applied_at = now()
