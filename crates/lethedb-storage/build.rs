//! Tells the PostgreSQL tests whether this run has a database. With `LETHEDB_TEST_POSTGRES`
//! set (or `LETHEDB_TEST_POSTGRES_REQUIRED`, under which a missing database fails them) the cfg
//! `lethedb_test_postgres` is on and they run; without it they are reported as ignored, with
//! the reason, rather than passing without testing anything. The library itself does not use
//! the cfg. The engine crate runs this same script (its `Cargo.toml` names it).

fn main() {
    println!("cargo::rustc-check-cfg=cfg(lethedb_test_postgres)");
    println!("cargo::rerun-if-env-changed=LETHEDB_TEST_POSTGRES");
    println!("cargo::rerun-if-env-changed=LETHEDB_TEST_POSTGRES_REQUIRED");
    let named = std::env::var("LETHEDB_TEST_POSTGRES").is_ok_and(|url| !url.is_empty());
    let required = std::env::var_os("LETHEDB_TEST_POSTGRES_REQUIRED").is_some();
    if named || required {
        println!("cargo::rustc-cfg=lethedb_test_postgres");
    }
}
