//! Rebuilds this crate when a migration is added, changed or removed: `embed_migrations!` reads
//! `migrations/` at compile time, and a proc macro cannot tell cargo which files it read, so
//! without this an incremental build kept embedding the old set.

fn main() {
    println!("cargo:rerun-if-changed=../../migrations");
    // Declaring one path turns off cargo's default of rerunning on any change in the package.
    println!("cargo:rerun-if-changed=Cargo.toml");
}
