//! The fixed hierarchical grid a spatial index keys geometries by, and the cells a query
//! region reads. The plane of longitude (−180 to 180) and latitude (−90 to 90) is cut at level
//! `L` into 2^L columns and 2^L rows; a cell's key is its column and row interleaved (Z-order)
//! and shifted to the finest level, then its level, so a cell's key range holds exactly the
//! keys of the cells inside it, at every finer level. Only even levels are used (each step
//! splits a cell into 16), which keeps a query's reads of coarser cells few.
//!
//! A geometry is indexed under the cells of the finest level at which at most
//! `GEOMETRY_CELLS_MAX` cells cover its footprint: the box of its positions in longitude and
//! latitude, widened to hold each edge's great-circle arc (an arc bulges towards a pole, and
//! one crossing the antimeridian widens the box to every longitude). A query region (the
//! footprint of a literal geometry, or the box holding every point within a geodesic distance
//! of a point, split in two at the antimeridian and widened to every longitude when it holds a
//! pole) reads the cells that cover it at the finest level where they are at most
//! `REGION_CELLS_MAX`, each with the cells inside it, and the coarser cells that contain them.
//! Two boxes that share a point share a cell at the coarser of their two levels, so every
//! geometry a filter can select is read; the evaluator decides which are. A cell's column is
//! `floor(t · 2^L)` of one `t` per coordinate, exact at every level, so the nesting is exact.
//!
//! This module computes keys and key ranges only; which path and document they belong to is
//! the engine's (`index/entries.rs`, `index/plan.rs`).

use geo::{Coord, CoordsIter, Geometry, LineString, Polygon};
use serde_json::Value;

use super::spatial::geometry;

/// The finest level: cells of 360/2^24 degrees of longitude (about 2.4 m at the equator).
const LEVEL_MAX: u32 = 24;

/// The step between the levels used.
const LEVEL_STEP: usize = 2;

/// A geometry has at most this many entries per path.
const GEOMETRY_CELLS_MAX: u64 = 8;

/// A query region reads at most this many cells at its own level.
const REGION_CELLS_MAX: u64 = 16;

/// Added on every side of a footprint, so that rounding in an arc's extremes (or in the
/// closest point the distance finds on it) never leaves a point outside.
const MARGIN_DEGREES: f64 = 1e-6;

/// The least length of one degree of latitude on the WGS 84 ellipsoid (110,574 m at the
/// equator), rounded down.
const METERS_PER_LATITUDE_DEGREE_MIN: f64 = 110_000.0;

/// Below the WGS 84 equatorial radius (6,378,137 m): a parallel's radius at latitude φ is at
/// least this times cos φ.
const EQUATORIAL_RADIUS_MIN_METERS: f64 = 6_378_000.0;

/// The length of a cell key: the interleaved column and row at the finest level, then the level.
pub const SPATIAL_CELL_KEY_BYTES: usize = 9;

/// A box in degrees that does not cross the antimeridian: `west <= east`, `south <= north`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Area {
    west: f64,
    south: f64,
    east: f64,
    north: f64,
}

const WORLD: Area = Area {
    west: -180.0,
    south: -90.0,
    east: 180.0,
    north: 90.0,
};

/// The cell keys a GeoJSON value is indexed under, sorted and without duplicates; `None` when
/// it is not a geometry the `ST_` functions accept (they are `undefined` on it, so no filter
/// can select it through them).
pub fn spatial_cells(value: &Value) -> Option<Vec<[u8; SPATIAL_CELL_KEY_BYTES]>> {
    let footprint = footprint(&geometry(value).ok()?)?;
    let level = finest_level(&[footprint], GEOMETRY_CELLS_MAX);
    let mut keys: Vec<_> = cells(&[footprint], level)
        .into_iter()
        .map(|(column, row)| cell_key(level, column, row))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    Some(keys)
}

/// The key ranges `[start, end)` of cell keys a query region reads for a literal geometry:
/// those of every indexed geometry whose footprint meets its footprint. `None` when the value
/// is not a geometry (the functions are then `undefined`).
pub(crate) fn geometry_region(value: &Value) -> Option<Vec<(Vec<u8>, Vec<u8>)>> {
    let footprint = footprint(&geometry(value).ok()?)?;
    Some(region_ranges(&[footprint]))
}

/// The key ranges a query region reads for `ST_DISTANCE(path, point) <= meters`: those of
/// every indexed geometry with a point within `meters` of `point`. `None` when the value is
/// not a GeoJSON point.
pub(crate) fn distance_region(value: &Value, meters: f64) -> Option<Vec<(Vec<u8>, Vec<u8>)>> {
    let Geometry::Point(point) = geometry(value).ok()? else {
        return None;
    };
    Some(region_ranges(&ball(point.0, meters.max(0.0))))
}

/// The box holding every position and every edge's great-circle arc of `geometry`, widened by
/// the margin; `None` for a geometry without positions (an empty MultiPolygon).
fn footprint(geometry: &Geometry) -> Option<Area> {
    let mut area: Option<Area> = None;
    for coord in geometry.coords_iter() {
        area = Some(match area {
            None => Area {
                west: coord.x,
                south: coord.y,
                east: coord.x,
                north: coord.y,
            },
            Some(area) => area.including(coord.x, coord.y),
        });
    }
    let mut area = area?;
    for line in lines(geometry) {
        for edge in line.0.windows(2) {
            area = arc_extent(area, edge[0], edge[1]);
        }
    }
    Some(area.widened(MARGIN_DEGREES, MARGIN_DEGREES))
}

/// The lines of a geometry: a line string, or each ring of each polygon.
fn lines(geometry: &Geometry) -> Vec<&LineString> {
    fn rings(polygon: &Polygon) -> Vec<&LineString> {
        std::iter::once(polygon.exterior())
            .chain(polygon.interiors())
            .collect()
    }
    match geometry {
        Geometry::LineString(line) => vec![line],
        Geometry::Polygon(polygon) => rings(polygon),
        Geometry::MultiPolygon(polygons) => polygons.iter().flat_map(rings).collect(),
        _ => Vec::new(),
    }
}

/// `area` widened to hold the minor great-circle arc from `a` to `b`: every longitude when the
/// arc crosses the antimeridian, the whole world when it may pass over a pole (its ends are
/// half a turn apart or antipodal), and the arc's highest or lowest latitude when that lies
/// between its ends.
fn arc_extent(area: Area, a: Coord, b: Coord) -> Area {
    let (start, end) = (unit_vector(a), unit_vector(b));
    let normal = cross(start, end);
    let length = dot(normal, normal).sqrt();
    let turn = (b.x - a.x).abs();
    // The longitudes the arc spans, the short way round.
    let span = turn.min(360.0 - turn);
    if span >= 180.0 - MARGIN_DEGREES || (length < 1e-9 && dot(start, end) < 0.0) {
        return WORLD;
    }
    let mut area = area;
    if turn > 180.0 {
        area.west = -180.0;
        area.east = 180.0;
    }
    if length < 1e-12 {
        return area;
    }
    let normal = [normal[0] / length, normal[1] / length, normal[2] / length];
    // The point of the arc's great circle nearest the north pole, and its antipode.
    let top = [
        -normal[2] * normal[0],
        -normal[2] * normal[1],
        1.0 - normal[2] * normal[2],
    ];
    for extreme in [top, [-top[0], -top[1], -top[2]]] {
        let between =
            dot(cross(start, extreme), normal) >= 0.0 && dot(cross(extreme, end), normal) >= 0.0;
        if between && dot(extreme, extreme) > 0.0 {
            let z = extreme[2] / dot(extreme, extreme).sqrt();
            let latitude = z.clamp(-1.0, 1.0).asin().to_degrees();
            area.south = area.south.min(latitude);
            area.north = area.north.max(latitude);
        }
    }
    area
}

/// The boxes holding every point within `meters` (along the WGS 84 ellipsoid) of `center`: the
/// latitude band a meridian of that length spans, and the longitudes a parallel of that length
/// spans at the band's highest latitude; every longitude when the band holds a pole or the
/// span is half a turn, and two boxes when it crosses the antimeridian.
fn ball(center: Coord, meters: f64) -> Vec<Area> {
    let latitude_span = meters / METERS_PER_LATITUDE_DEGREE_MIN + MARGIN_DEGREES;
    let south = center.y - latitude_span;
    let north = center.y + latitude_span;
    let band = |west: f64, east: f64| Area {
        west,
        south: south.max(-90.0),
        east,
        north: north.min(90.0),
    };
    if south <= -90.0 || north >= 90.0 {
        return vec![band(-180.0, 180.0)];
    }
    let highest = south.abs().max(north.abs()).to_radians();
    let longitude_span =
        (meters / (EQUATORIAL_RADIUS_MIN_METERS * highest.cos())).to_degrees() + MARGIN_DEGREES;
    if !longitude_span.is_finite() || longitude_span >= 180.0 {
        return vec![band(-180.0, 180.0)];
    }
    let (west, east) = (center.x - longitude_span, center.x + longitude_span);
    if west < -180.0 {
        vec![band(west + 360.0, 180.0), band(-180.0, east)]
    } else if east > 180.0 {
        vec![band(west, 180.0), band(-180.0, east - 360.0)]
    } else {
        vec![band(west, east)]
    }
}

/// The key ranges of every cell key in a cell covering `areas` (at their finest level with at
/// most `REGION_CELLS_MAX` cells) or inside one, and of the coarser cells containing those,
/// ascending and merged where they touch.
fn region_ranges(areas: &[Area]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let level = finest_level(areas, REGION_CELLS_MAX);
    let covering = cells(areas, level);
    let mut ranges: Vec<(u64, u64)> = covering
        .iter()
        .map(|&(column, row)| {
            let start = padded(level, column, row);
            (start, start + (1u64 << (2 * (LEVEL_MAX - level))))
        })
        .collect();
    ranges.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (start, end) in ranges {
        match merged.last_mut() {
            Some(last) if last.1 >= start => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    let mut out: Vec<(Vec<u8>, Vec<u8>)> = merged
        .iter()
        .map(|(start, end)| (start.to_be_bytes().to_vec(), end.to_be_bytes().to_vec()))
        .collect();
    out.extend(ancestor_ranges(level, &covering, &merged));
    out.sort_unstable();
    out
}

/// The exact key ranges of the cells at levels coarser than `level` containing `covering`,
/// except those whose keys `merged` already reads.
fn ancestor_ranges(
    level: u32,
    covering: &[(u32, u32)],
    merged: &[(u64, u64)],
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    for coarser in (0..level).step_by(LEVEL_STEP) {
        let shift = level - coarser;
        let mut parents: Vec<(u32, u32)> = covering
            .iter()
            .map(|&(column, row)| (column >> shift, row >> shift))
            .collect();
        parents.sort_unstable();
        parents.dedup();
        for (column, row) in parents {
            let start = padded(coarser, column, row);
            if merged
                .iter()
                .any(|&(low, high)| low <= start && start < high)
            {
                continue;
            }
            let key = cell_key(coarser, column, row);
            let mut end = key.to_vec();
            end[SPATIAL_CELL_KEY_BYTES - 1] += 1;
            out.push((key.to_vec(), end));
        }
    }
    out
}

/// The finest used level at which `areas` are covered by at most `most` cells.
fn finest_level(areas: &[Area], most: u64) -> u32 {
    let mut chosen = 0;
    for level in (0..=LEVEL_MAX).step_by(LEVEL_STEP) {
        let count: u64 = areas
            .iter()
            .map(|area| {
                let columns = u64::from(column(area.east, level) - column(area.west, level)) + 1;
                let rows = u64::from(row(area.north, level) - row(area.south, level)) + 1;
                columns * rows
            })
            .sum();
        if count > most {
            break;
        }
        chosen = level;
    }
    chosen
}

/// The cells of `level` that cover `areas` (their edges included), as (column, row).
fn cells(areas: &[Area], level: u32) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    for area in areas {
        for column in column(area.west, level)..=column(area.east, level) {
            for row in row(area.south, level)..=row(area.north, level) {
                out.push((column, row));
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

fn column(longitude: f64, level: u32) -> u32 {
    grid_index((longitude + 180.0) / 360.0, level)
}

fn row(latitude: f64, level: u32) -> u32 {
    grid_index((latitude + 90.0) / 180.0, level)
}

/// `floor(t · 2^level)` of `t` clamped to [0, 1], the last cell holding `t = 1`. The product
/// by a power of two is exact, so a point's cell at a coarser level is its cell's ancestor.
fn grid_index(t: f64, level: u32) -> u32 {
    let cells = 1u64 << level;
    let index = (t.clamp(0.0, 1.0) * cells as f64).floor() as u64;
    index.min(cells - 1) as u32
}

/// A cell's column and row interleaved (Z-order), shifted to the finest level.
fn padded(level: u32, column: u32, row: u32) -> u64 {
    let mut z = 0u64;
    for bit in 0..level {
        z |= u64::from((column >> bit) & 1) << (2 * bit + 1);
        z |= u64::from((row >> bit) & 1) << (2 * bit);
    }
    z << (2 * (LEVEL_MAX - level))
}

fn cell_key(level: u32, column: u32, row: u32) -> [u8; SPATIAL_CELL_KEY_BYTES] {
    let mut key = [0u8; SPATIAL_CELL_KEY_BYTES];
    key[..8].copy_from_slice(&padded(level, column, row).to_be_bytes());
    key[8] = level as u8;
    key
}

impl Area {
    fn including(self, longitude: f64, latitude: f64) -> Area {
        Area {
            west: self.west.min(longitude),
            south: self.south.min(latitude),
            east: self.east.max(longitude),
            north: self.north.max(latitude),
        }
    }

    fn widened(self, longitude: f64, latitude: f64) -> Area {
        Area {
            west: (self.west - longitude).max(-180.0),
            south: (self.south - latitude).max(-90.0),
            east: (self.east + longitude).min(180.0),
            north: (self.north + latitude).min(90.0),
        }
    }
}

fn unit_vector(coord: Coord) -> [f64; 3] {
    let (longitude, latitude) = (coord.x.to_radians(), coord.y.to_radians());
    [
        latitude.cos() * longitude.cos(),
        latitude.cos() * longitude.sin(),
        latitude.sin(),
    ]
}

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

#[cfg(test)]
mod tests;
