//! How full each table of a redb store file is: opens `lethedb.redb` (from a stopped server's
//! data directory) and prints, per table, its entries, the bytes of their keys and values, the
//! leaf and branch pages, and the bytes redb reports stored, as metadata and fragmented. Tables
//! of every key and value type are shown; redb's own are skipped.
//!
//!   cargo run --release -p lethedb-storage --example redb_table_stats -- DATA_DIR/lethedb.redb

use redb::{ReadableDatabase, ReadableTableMetadata, TableDefinition, TableHandle};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: redb_table_stats FILE")?;
    // Read only: a file that needs recovery is refused, never repaired in place.
    let database = redb::ReadOnlyDatabase::open(&path)?;
    let read = database.begin_read()?;
    println!("table          entries   key+value B    leaves  branches   stored B   meta B   frag B  B/page-used");
    let names: Vec<String> = read
        .list_tables()?
        .map(|table| table.name().to_string())
        .collect();
    for name in &names {
        let name = name.as_str();
        // Untyped: item bodies and their pieces have keys and values of their own types.
        let Ok(table) = read.open_untyped_table(TableDefinition::<&[u8], &[u8]>::new(name)) else {
            continue;
        };
        let stats = table.stats()?;
        // What redb reports stored is the bytes of the keys and values.
        let (entries, bytes) = (table.len()?, stats.stored_bytes());
        let pages = stats.leaf_pages() + stats.branch_pages();
        println!(
            "{name:<13} {entries:>8} {bytes:>13} {:>9} {:>9} {:>10} {:>8} {:>8}  {:.2}",
            stats.leaf_pages(),
            stats.branch_pages(),
            stats.stored_bytes(),
            stats.metadata_bytes(),
            stats.fragmented_bytes(),
            bytes as f64 / (pages.max(1) * 4096) as f64,
        );
    }
    println!("file {} B", std::fs::metadata(&path)?.len());
    Ok(())
}
