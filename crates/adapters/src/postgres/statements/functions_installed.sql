SELECT signature, sha256 FROM timetrack_functions
