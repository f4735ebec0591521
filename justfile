# Conveniences around cargo; the README's two commands need none of them.

set shell := ["bash", "-euo", "pipefail", "-c"]

# List the recipes.
default:
    @just --list

# Run the service (private PostgreSQL under .timetrack/ unless DATABASE_URL is set).
run *ARGS:
    cargo run -- {{ARGS}}

# Run every test (starts its own PostgreSQL unless DATABASE_URL is set).
test *ARGS:
    cargo test --workspace {{ARGS}}

# Format the code.
fmt:
    cargo fmt --all

# Formatting, clippy with warnings as errors, the layering check, and the domain's docs.
lint:
    cargo fmt --all -- --check
    cargo clippy --workspace --all-targets -- -D warnings
    scripts/check-layers.sh
    RUSTDOCFLAGS="-D warnings" cargo doc -p timetrack-domain --no-deps --quiet

# Prove that timetrack-domain depends on no I/O framework.
check-layers:
    scripts/check-layers.sh

# What CI runs, from this tree.
ci:
    bash .ci/run

# Apply migrations (to the private cluster under .timetrack/ unless DATABASE_URL is set).
db-migrate:
    cargo run -- migrate

# Start the service and its private cluster in the background; print the cluster's psql URL.
db-up:
    #!/usr/bin/env bash
    set -euo pipefail
    cargo build --quiet
    nohup target/debug/timetrack serve --bind 127.0.0.1:0 > .timetrack-db-up.log 2>&1 &
    echo $! > .timetrack/db-up.pid 2>/dev/null || { mkdir -p .timetrack; echo $! > .timetrack/db-up.pid; }
    for _ in $(seq 1 100); do [ -f .timetrack/cluster.json ] && grep -q listening .timetrack-db-up.log && break; sleep 0.2; done
    port=$(sed -n 's/.*"port": *\([0-9]*\).*/\1/p' .timetrack/cluster.json)
    password=$(sed -n 's/.*"password": *"\([^"]*\)".*/\1/p' .timetrack/cluster.json)
    echo "postgres://timetrack:${password}@127.0.0.1:${port}/timetrack"

# Stop what `just db-up` started.
db-down:
    kill "$(cat .timetrack/db-up.pid)" && rm -f .timetrack/db-up.pid .timetrack-db-up.log

# Regenerate the diesel schema.rs from migrations (diesel_cli, scratch DB in DATABASE_URL).
db-schema:
    diesel migration run
    cargo fmt --all

# Benchmarks against the machine's own limits; writes docs/benchmarks.md (about 40 minutes).
bench *ARGS:
    cargo build --release -p timetrack-api -p timetrack-bench
    target/release/timetrack-bench {{ARGS}}

# A seconds-long run of the benchmark tool on the debug build, as CI runs it.
bench-smoke:
    cargo build -p timetrack-api -p timetrack-bench
    target/debug/timetrack-bench --smoke --server-bin target/debug/timetrack --report target/bench-smoke/benchmarks.md --data-dir target/bench-smoke

# The fault and abuse suite at full size on the release build; writes its figures into
# docs/reliability.md (about 20 minutes; its Patroni runs install patroni and etcd-server, and its
# restore scenario pgbackrest, with apt when they are missing).
chaos *ARGS:
    cargo build --release -p timetrack-api -p timetrack-chaos
    target/release/timetrack-chaos --report docs/reliability.md {{ARGS}}

# The quick scenarios of the fault suite on the debug build, as CI runs them (a few minutes).
chaos-quick *ARGS:
    cargo build -p timetrack-api -p timetrack-chaos
    target/debug/timetrack-chaos --quick --server-bin target/debug/timetrack --data-dir target/chaos-quick {{ARGS}}
