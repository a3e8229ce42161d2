//! The grid's promise checked against the `ST_` functions themselves: whenever a function
//! would select a geometry, the query region reads one of its cells, for random points, lines
//! and polygons of every size, many of them at the antimeridian and the poles.

use super::*;
use crate::builtins::Builtin;
use crate::functions::spatial::call;
use serde_json::json;
use std::borrow::Cow;

struct Xorshift(u64);

impl Xorshift {
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }

    fn between(&mut self, low: f64, high: f64) -> f64 {
        low + (high - low) * self.unit()
    }
}

/// A position near one of the places where grids go wrong, or anywhere.
fn center(rng: &mut Xorshift) -> (f64, f64) {
    match (rng.unit() * 4.0) as u32 {
        0 => (
            rng.between(179.0, 180.0) * sign(rng),
            rng.between(-80.0, 80.0),
        ),
        1 => (
            rng.between(-180.0, 180.0),
            rng.between(88.0, 90.0) * sign(rng),
        ),
        2 => (rng.between(-1.0, 1.0), rng.between(-1.0, 1.0)),
        _ => (rng.between(-180.0, 180.0), rng.between(-90.0, 90.0)),
    }
}

fn sign(rng: &mut Xorshift) -> f64 {
    if rng.unit() < 0.5 {
        -1.0
    } else {
        1.0
    }
}

/// A position within `size` degrees of `center`, kept in range.
fn near(rng: &mut Xorshift, (longitude, latitude): (f64, f64), size: f64) -> Value {
    let longitude = (longitude + rng.between(-size, size)).clamp(-180.0, 180.0);
    let latitude = (latitude + rng.between(-size, size)).clamp(-90.0, 90.0);
    json!([longitude, latitude])
}

fn random_geometry(rng: &mut Xorshift, middle: (f64, f64)) -> Value {
    let size = [1e-4, 1e-2, 0.5, 5.0, 40.0][(rng.unit() * 5.0) as usize];
    match (rng.unit() * 3.0) as u32 {
        0 => json!({"type": "Point", "coordinates": near(rng, middle, size)}),
        1 => {
            let line: Vec<Value> = (0..2 + (rng.unit() * 3.0) as usize)
                .map(|_| near(rng, middle, size))
                .collect();
            json!({"type": "LineString", "coordinates": line})
        }
        _ => {
            let mut ring: Vec<Value> = (0..3).map(|_| near(rng, middle, size)).collect();
            ring.push(ring[0].clone());
            json!({"type": "Polygon", "coordinates": [ring]})
        }
    }
}

fn evaluate(builtin: Builtin, first: &Value, second: &Value) -> Option<Value> {
    call(
        builtin,
        &[Some(Cow::Borrowed(first)), Some(Cow::Borrowed(second))],
    )
}

/// Whether `ranges` read one of `cells`.
fn reads(ranges: &[(Vec<u8>, Vec<u8>)], cells: &[[u8; SPATIAL_CELL_KEY_BYTES]]) -> bool {
    cells.iter().any(|cell| {
        ranges.iter().any(|(start, end)| {
            cell.as_slice() >= start.as_slice() && cell.as_slice() < end.as_slice()
        })
    })
}

#[test]
fn every_geometry_a_function_selects_is_in_a_cell_the_region_reads() {
    let mut rng = Xorshift(0x5eed_1234_abcd_0001);
    let (mut related, mut near_enough, mut missed_far) = (0, 0, 0);
    for _ in 0..20_000 {
        // Half of the pairs around one place, so that many of them meet.
        let middle = center(&mut rng);
        let document = random_geometry(&mut rng, middle);
        let elsewhere = center(&mut rng);
        let query_middle = if rng.unit() < 0.5 { middle } else { elsewhere };
        let query = random_geometry(&mut rng, query_middle);
        let cells = spatial_cells(&document).expect("a geometry");
        assert!(!cells.is_empty() && cells.len() as u64 <= GEOMETRY_CELLS_MAX);
        let region = geometry_region(&query).expect("a geometry");
        let relates = [
            evaluate(Builtin::StIntersects, &document, &query),
            evaluate(Builtin::StWithin, &document, &query),
            evaluate(Builtin::StWithin, &query, &document),
        ]
        .contains(&Some(Value::Bool(true)));
        if relates {
            related += 1;
            assert!(reads(&region, &cells), "{document} and {query}");
        }
        let point = json!({"type": "Point", "coordinates": near(&mut rng, query_middle, 0.0)});
        let meters = [10.0, 1_000.0, 100_000.0, 3_000_000.0][(rng.unit() * 4.0) as usize];
        let distance = evaluate(Builtin::StDistance, &document, &point)
            .and_then(|value| value.as_f64())
            .expect("a distance");
        let region = distance_region(&point, meters).expect("a point");
        if distance <= meters {
            near_enough += 1;
            assert!(
                reads(&region, &cells),
                "{document} within {meters} m of {point}"
            );
        } else if !reads(&region, &cells) {
            missed_far += 1;
        }
    }
    // The checks above ran on enough positive cases, and the regions do leave most far
    // geometries out.
    assert!(
        related > 1_000 && near_enough > 2_000,
        "{related} {near_enough}"
    );
    assert!(missed_far > 2_000, "{missed_far}");
}

#[test]
fn the_antimeridian_the_poles_and_arcs_join_what_is_near() {
    let point = |longitude: f64, latitude: f64| json!({"type": "Point", "coordinates": [longitude, latitude]});
    let cases = [
        (point(179.9999, 0.0), point(-179.9999, 0.0)),
        (point(180.0, 10.0), point(-180.0, 10.0)),
        (point(0.0, 89.9999), point(180.0, 89.9999)),
        (point(45.0, 90.0), point(-135.0, 90.0)),
        (point(-100.0, -89.99995), point(80.0, -89.99995)),
    ];
    for (document, query) in cases {
        let distance = evaluate(Builtin::StDistance, &document, &query)
            .and_then(|value| value.as_f64())
            .expect("a distance");
        assert!(distance < 100.0, "{document} {query}: {distance}");
        let cells = spatial_cells(&document).expect("a point");
        assert!(reads(
            &distance_region(&query, 100.0).expect("a point"),
            &cells
        ));
    }
    // The great-circle arc from (-10, 61.8) to (10, 61.8) peaks near latitude 62.16, in the
    // row of cells north of its ends: the distance finds its closest point there.
    let line = json!({"type": "LineString", "coordinates": [[-10, 61.8], [10, 61.8]]});
    let north = point(0.0, 62.1);
    let distance = evaluate(Builtin::StDistance, &line, &north)
        .and_then(|value| value.as_f64())
        .expect("a distance");
    assert!(distance < 20_000.0, "{distance}");
    let cells = spatial_cells(&line).expect("a line");
    assert!(reads(
        &distance_region(&north, 20_000.0).expect("a point"),
        &cells
    ));
    // Far apart, the cells a small region reads hold neither.
    let seattle = point(-122.33, 47.61);
    let region = distance_region(&seattle, 5_000.0).expect("a point");
    assert!(!reads(
        &region,
        &spatial_cells(&point(151.21, -33.87)).expect("a point")
    ));
    assert!(!reads(
        &region,
        &spatial_cells(&point(-122.0, 48.0)).expect("a point")
    ));
    assert!(reads(
        &region,
        &spatial_cells(&point(-122.34, 47.62)).expect("a point")
    ));
}

#[test]
fn only_geometries_have_cells() {
    assert_eq!(spatial_cells(&json!({"type": "Point"})), None);
    assert_eq!(spatial_cells(&json!([1, 2])), None);
    assert_eq!(
        spatial_cells(&json!({"type": "Point", "coordinates": [0, 91]})),
        None
    );
    assert_eq!(
        spatial_cells(&json!({"type": "MultiPolygon", "coordinates": []})),
        None
    );
    // No function selects an empty MultiPolygon, so it needs no cell.
    let empty = json!({"type": "MultiPolygon", "coordinates": []});
    let square = json!({"type": "Polygon",
        "coordinates": [[[-1, -1], [1, -1], [1, 1], [-1, 1], [-1, -1]]]});
    for builtin in [Builtin::StWithin, Builtin::StIntersects] {
        assert_ne!(evaluate(builtin, &empty, &square), Some(Value::Bool(true)));
        assert_ne!(evaluate(builtin, &square, &empty), Some(Value::Bool(true)));
    }
    let distance = evaluate(
        Builtin::StDistance,
        &empty,
        &json!({"type": "Point", "coordinates": [0, 0]}),
    );
    assert!(distance.is_none(), "{distance:?}");
    assert_eq!(
        distance_region(
            &json!({"type": "LineString", "coordinates": [[0, 0], [1, 1]]}),
            5.0
        ),
        None
    );
}
