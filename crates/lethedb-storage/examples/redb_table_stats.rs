//! How full each table of a redb store file is: opens `lethedb.redb` (from a stopped server's
//! data directory) and prints, per table, its entries, the bytes of their keys and values, the
//! leaf and branch pages, and the bytes redb reports stored, as metadata and fragmented. Tables
//! of byte keys (or numbered item bodies) and byte values are shown; redb's own are skipped.
//!
//!   cargo run --release -p lethedb-storage --example redb_table_stats -- DATA_DIR/lethedb.redb

use redb::{ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition, TableHandle};

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
        let definition: TableDefinition<&[u8], &[u8]> = TableDefinition::new(name);
        let (stats, entries, bytes) = match read.open_table(definition) {
            Ok(table) => {
                let (mut entries, mut bytes) = (0u64, 0u64);
                for entry in table.iter()? {
                    let (key, value) = entry?;
                    entries += 1;
                    bytes += (key.value().len() + value.value().len()) as u64;
                }
                (table.stats()?, entries, bytes)
            }
            // Item bodies are numbered since the layout that keeps them in arrival order.
            Err(redb::TableError::TableTypeMismatch { .. }) => {
                let definition: TableDefinition<u64, &[u8]> = TableDefinition::new(name);
                let Ok(table) = read.open_table(definition) else {
                    continue;
                };
                let (mut entries, mut bytes) = (0u64, 0u64);
                for entry in table.iter()? {
                    let (_, value) = entry?;
                    entries += 1;
                    bytes += 8 + value.value().len() as u64;
                }
                (table.stats()?, entries, bytes)
            }
            Err(_) => continue,
        };
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
