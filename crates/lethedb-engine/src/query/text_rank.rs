//! A page of the hybrid pipelines' full-text component query (`ORDER BY _FullTextScore(...)
//! DESC` with `TOP`, `lethedb_query::TextRank`) fed from the full-text impact entries instead
//! of a scan. Each term's stem has its entries grouped by how often a text holds the stem,
//! each group from the shortest text down (`keys::index_full_text_impact_prefix`), so merging
//! the groups gives the stem's texts from the best share of the score down, ties from the
//! latest document, which is the page's own order. The walk (the threshold algorithm) takes
//! the next entry of the term whose next share is largest, loads its document through the
//! scan's visibility check, and stops once the rows the query can return have passed the
//! filter and no document not yet loaded can beat the last of them or tie with it and come
//! first: its score is at most the sum of each term's next share, exactly that share when one
//! term is left.
//!
//! When every term's entries run out before enough rows pass (documents holding no term
//! score 0 and would come next), or the walk loads more than a quarter of the container, the
//! page scans. It decides only which documents to load; the page sorts them by the score the
//! evaluator computes, so its rows are the scan's, which the verify mode checks.

use crate::clock::Stopwatch;
use crate::container::Container;
use crate::counters::read_container_counters;
use crate::error::{corrupted, EngineResult};
use crate::keys;
use crate::query::scan::{ItemVisit, PageScan, ScanScope, ScanTally};
use crate::query::seek::{item_key_of, IndexTally};
use crate::records::ItemRecord;
use lethedb_query::{full_text_stem_key, PageRun, Prepared, TextRank};
use lethedb_storage::{prefix_successor, KeyRange, ReadTxn, Table};
use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashSet, VecDeque};
use std::ops::{Bound, ControlFlow};

/// Entries read from a group at a time.
const GROUP_BATCH: usize = 64;
/// The walk gives way to the scan once it has offered more than a quarter of the container's
/// items, and never before this many.
const OFFERED_SHARE_DIVISOR: u64 = 4;
const OFFERED_MIN: u64 = 1_024;

/// The ranking a page of `prepared` asks for, when the container's full-text index on its
/// path can serve it (the caller checks that no rebuild runs).
pub(crate) fn text_rank_plan(prepared: &Prepared, container: &Container) -> Option<TextRank> {
    let rank = prepared.text_rank()?;
    container
        .index_policy
        .full_text_language(&rank.path)
        .is_some()
        .then_some(rank)
}

/// A document's place in the page's order: the larger score first, then the later document.
#[derive(Clone, Copy, PartialEq)]
struct Ranked {
    score: f64,
    document: u64,
}

impl Eq for Ranked {}
impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Ranked {
    /// Greater is better.
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .total_cmp(&other.score)
            .then(self.document.cmp(&other.document))
    }
}

/// The impact entries of one stem with one count, shortest text first.
struct Group {
    count: u32,
    /// The stem's prefix and the count's bytes.
    range: KeyRange,
    /// Entries read and not yet taken: (words, document).
    buffered: VecDeque<(u32, u64)>,
    /// The last key read, once one was.
    last: Option<Vec<u8>>,
    /// Whether every entry was read into `buffered`.
    read_out: bool,
}

/// One term's walk over its stem's groups.
struct Stream {
    term: usize,
    /// The length of the stem's prefix, before the count.
    prefix_bytes: usize,
    groups: Vec<Group>,
}

/// What a walk read of the index.
#[derive(Default)]
struct Reads {
    lookups: u64,
    entries: u64,
}

impl Group {
    /// Reads the next batch of entries if none is buffered.
    fn fill(
        &mut self,
        reader: &dyn ReadTxn,
        prefix_bytes: usize,
        reads: &mut Reads,
    ) -> EngineResult<()> {
        if !self.buffered.is_empty() || self.read_out {
            return Ok(());
        }
        let mut range = self.range.clone();
        if let Some(last) = &self.last {
            range.start = Bound::Excluded(last.clone());
        }
        reads.lookups += 1;
        let mut failure = None;
        reader.scan(Table::Index, &range, &mut |key, _| {
            match keys::full_text_impact_parts(key, prefix_bytes) {
                Some((_, words, document)) => self.buffered.push_back((words, document)),
                None => failure = Some(corrupted("full-text impact entry")),
            }
            self.last = Some(key.to_vec());
            if self.buffered.len() >= GROUP_BATCH || failure.is_some() {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })?;
        if let Some(failure) = failure {
            return Err(failure);
        }
        reads.entries += self.buffered.len() as u64;
        self.read_out = self.buffered.len() < GROUP_BATCH;
        Ok(())
    }

    /// The group's next entry as the page ranks it, by this term's share alone.
    fn head(&self, rank: &TextRank, term: usize) -> Option<Ranked> {
        let (words, document) = *self.buffered.front()?;
        Some(Ranked {
            score: rank.share(term, self.count, words),
            document,
        })
    }

    /// Whether entries of this group with its head's share all come after the head: the next
    /// longer text's share is smaller (a longer text never has a larger share, but two lengths
    /// may round to one share, and the group orders them by length before document).
    fn ties_in_order(&self, rank: &TextRank, term: usize) -> bool {
        self.buffered.front().is_none_or(|(words, _)| {
            rank.share(term, self.count, words.saturating_add(1))
                < rank.share(term, self.count, *words)
        })
    }
}

impl Stream {
    /// The stem's groups, one per count its texts hold it, each with its first batch read.
    fn open(
        reader: &dyn ReadTxn,
        container: &Container,
        rank: &TextRank,
        term: usize,
        reads: &mut Reads,
    ) -> EngineResult<Option<Stream>> {
        let Some(stem) = &rank.stems[term] else {
            return Ok(None);
        };
        let mut prefix = keys::index_full_text_impact_prefix(container.key_number(), &rank.path);
        prefix.extend_from_slice(&full_text_stem_key(stem));
        let mut stream = Stream {
            term,
            prefix_bytes: prefix.len(),
            groups: Vec::new(),
        };
        let mut rest = KeyRange::prefix(&prefix);
        loop {
            reads.lookups += 1;
            let mut first = None;
            reader.scan(Table::Index, &rest, &mut |key, _| {
                first = keys::full_text_impact_parts(key, prefix.len());
                ControlFlow::Break(())
            })?;
            let Some((count, _, _)) = first else {
                break;
            };
            let group_prefix = [prefix.as_slice(), &(!count).to_be_bytes()].concat();
            let mut group = Group {
                count,
                range: KeyRange::prefix(&group_prefix),
                buffered: VecDeque::new(),
                last: None,
                read_out: false,
            };
            group.fill(reader, stream.prefix_bytes, reads)?;
            stream.groups.push(group);
            match prefix_successor(&group_prefix) {
                Some(next) => rest.start = Bound::Included(next),
                None => break,
            }
        }
        Ok(Some(stream))
    }

    /// The stream's next entry in the page's order (the best of its groups' heads) and the
    /// group holding it.
    fn frontier(&self, rank: &TextRank) -> Option<(Ranked, usize)> {
        self.groups
            .iter()
            .enumerate()
            .filter_map(|(position, group)| Some((group.head(rank, self.term)?, position)))
            .max_by(|a, b| a.0.cmp(&b.0))
    }

    /// Takes the stream's next document.
    fn take(
        &mut self,
        reader: &dyn ReadTxn,
        rank: &TextRank,
        reads: &mut Reads,
    ) -> EngineResult<Option<u64>> {
        let Some((_, position)) = self.frontier(rank) else {
            return Ok(None);
        };
        let group = &mut self.groups[position];
        let taken = group.buffered.pop_front().map(|(_, document)| document);
        group.fill(reader, self.prefix_bytes, reads)?;
        Ok(taken)
    }
}

/// The documents a walk has loaded, and the best rows of them.
struct Walk<'a, 'r> {
    reader: &'a dyn ReadTxn,
    scan: &'a PageScan<'a>,
    container: &'a Container,
    scope: &'a ScanScope,
    visit: ItemVisit<'a>,
    run: &'r mut PageRun,
    offered: HashSet<u64>,
    /// The best `rows` documents whose row passed the filter, the worst on top.
    best: BinaryHeap<Reverse<Ranked>>,
}

impl Walk<'_, '_> {
    /// Loads and pushes `document` unless it was offered already; keeps its score among the
    /// best when its row passed the filter.
    fn offer(&mut self, document: u64, rank: &TextRank, rows: usize) -> EngineResult<()> {
        if !self.offered.insert(document) {
            return Ok(());
        }
        let key = item_key_of(self.reader, self.container.key_number(), document)?;
        if !self.scope.spans(&key) {
            return Ok(());
        }
        let Some(value) = self.reader.get(Table::Items, &key)? else {
            return Ok(());
        };
        let matched = self.run.rows_matched();
        // An ORDER BY page takes every document it is offered (it never answers `Break`).
        let _ = self.visit.item(self.run, &key, &value)?;
        if self.run.rows_matched() == matched {
            return Ok(());
        }
        // The page parsed it a moment ago: the document cache holds it.
        let (_, lsn, _) = ItemRecord::decode_header(&value).ok_or_else(|| corrupted("item"))?;
        let document_value = self.scan.document(&key, lsn, &value)?;
        self.best.push(Reverse(Ranked {
            score: rank.score(&document_value),
            document,
        }));
        if self.best.len() > rows {
            self.best.pop();
        }
        Ok(())
    }
}

/// Whether no document left unoffered can be among the `rows` best of `best`: its score is at
/// most the sum of each live stream's next share, and, when one stream is left, exactly its
/// share there, coming after that stream's next entry.
fn settled(
    streams: &[Stream],
    rank: &TextRank,
    best: &BinaryHeap<Reverse<Ranked>>,
    rows: usize,
) -> bool {
    let Some(Reverse(last)) = best.peek().filter(|_| best.len() >= rows) else {
        return false;
    };
    let frontiers: Vec<(Ranked, usize)> = streams.iter().filter_map(|s| s.frontier(rank)).collect();
    // Summed in term order, as the score sums the terms' shares.
    let bound: f64 = frontiers.iter().map(|(next, _)| next.score).sum();
    if last.score > bound {
        return true;
    }
    match (
        frontiers.as_slice(),
        streams.iter().find(|s| s.frontier(rank).is_some()),
    ) {
        ([(next, _)], Some(stream)) => {
            *last > *next
                && stream.groups.iter().all(|group| {
                    group
                        .head(rank, stream.term)
                        .is_none_or(|head| head.score != next.score)
                        || group.ties_in_order(rank, stream.term)
                })
        }
        _ => false,
    }
}

impl PageScan<'_> {
    /// Feeds `run` from the full-text impact entries of `rank`'s terms (see the module's
    /// documentation); `None` when the page must scan instead.
    pub(crate) fn text_rank(
        &self,
        reader: &dyn ReadTxn,
        scope: &ScanScope,
        rank: &TextRank,
        run: &mut PageRun,
    ) -> EngineResult<Option<(ScanTally, IndexTally)>> {
        let started = Stopwatch::start();
        run.feed_in_sort_order()?;
        let mut reads = Reads::default();
        let mut streams = Vec::new();
        for term in 0..rank.stems.len() {
            streams.extend(Stream::open(
                reader,
                self.container,
                rank,
                term,
                &mut reads,
            )?);
        }
        let items = read_container_counters(reader, self.container)?.items;
        let offered_max = (items / OFFERED_SHARE_DIVISOR).max(OFFERED_MIN);
        let rows = usize::try_from(rank.rows).unwrap_or(usize::MAX);
        let mut walk = Walk {
            reader,
            scan: self,
            container: self.container,
            scope,
            visit: self.visitor(scope),
            run,
            offered: HashSet::new(),
            best: BinaryHeap::new(),
        };
        loop {
            if settled(&streams, rank, &walk.best, rows) {
                break;
            }
            let next = streams
                .iter()
                .enumerate()
                .filter_map(|(position, stream)| Some((stream.frontier(rank)?.0, position)))
                .max_by(|a, b| a.0.score.total_cmp(&b.0.score));
            let Some((_, position)) = next else {
                // Every term's entries ran out: documents holding none would come next.
                return Ok(None);
            };
            if let Some(document) = streams[position].take(reader, rank, &mut reads)? {
                walk.offer(document, rank, rows)?;
            }
            if walk.offered.len() as u64 > offered_max {
                return Ok(None);
            }
        }
        let mut tally = walk.visit.tally;
        tally.scan = started.elapsed();
        let index = IndexTally {
            lookups: reads.lookups,
            entries: reads.entries,
            time: std::time::Duration::ZERO,
        };
        Ok(Some((tally, index)))
    }
}
