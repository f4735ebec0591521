-- Notes that the replaceable function `signature` is installed with text of hash `sha256`.
INSERT INTO timetrack_functions (signature, sha256, applied_at)
VALUES (:signature, :sha256, now())
ON CONFLICT (signature) DO UPDATE SET sha256 = :sha256, applied_at = now()
