#!/usr/bin/env bash
# Proves the layering: timetrack-domain depends (normally, not only in tests) on none of the I/O
# frameworks. `cargo tree -i` prints the path to a crate when it is in the graph, and fails with
# "did not match any packages" when it is not.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
for crate in tokio diesel diesel-async actix-web actix-rt hyper hyper-util reqwest tokio-postgres deadpool; do
  if tree=$(cargo tree --offline -p timetrack-domain -e normal -i "$crate" 2>/dev/null) && [ -n "$tree" ]; then
    echo "layering violation: timetrack-domain depends on $crate:" >&2
    echo "$tree" >&2
    status=1
  fi
done
[ "$status" -eq 0 ] && echo "check-layers: timetrack-domain is free of tokio, diesel, actix, hyper and friends"
exit "$status"
