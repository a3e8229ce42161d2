//! The geospatial functions over GeoJSON values: `ST_DISTANCE` (meters along the WGS 84
//! ellipsoid), `ST_WITHIN`, `ST_INTERSECTS`, `ST_AREA` (square meters), `ST_ISVALID` and
//! `ST_ISVALIDDETAILED`, for Point, LineString, Polygon and MultiPolygon. The geometry is the
//! `geo` crate's: geodesic distances and areas, and containment and intersection computed in
//! longitude/latitude as on a plane.
//!
//! As every built-in, a function given something that is not a valid geometry returns
//! `undefined` (the validity functions say why instead).

use geo::{
    Closest, Coord, CoordsIter, Distance, Geodesic, GeodesicArea, Geometry, HaversineClosestPoint,
    Intersects, LineString, MultiPolygon, Point, Polygon, Within,
};
use serde_json::{json, Value};

use crate::builtins::Builtin;
use crate::context::Val;
use crate::value::number_value;

/// Computes an `ST_` function over evaluated arguments.
pub fn call(builtin: Builtin, args: &[Val<'_>]) -> Option<Value> {
    let argument = |index: usize| args.get(index).and_then(|value| value.as_deref());
    match builtin {
        Builtin::StIsValid => Some(Value::Bool(geometry(argument(0)?).is_ok())),
        Builtin::StIsValidDetailed => Some(match geometry(argument(0)?) {
            Ok(_) => json!({"valid": true}),
            Err(reason) => json!({"valid": false, "reason": reason}),
        }),
        Builtin::StArea => number_value(area(&geometry(argument(0)?).ok()?)),
        _ => {
            let first = geometry(argument(0)?).ok()?;
            let second = geometry(argument(1)?).ok()?;
            match builtin {
                Builtin::StDistance => number_value(distance(&first, &second)),
                Builtin::StWithin => Some(Value::Bool(first.is_within(&second))),
                Builtin::StIntersects => Some(Value::Bool(first.intersects(&second))),
                _ => None,
            }
        }
    }
}

/// The geodesic distance in meters between two geometries: between points exactly; otherwise
/// zero where they meet, else the least distance from a vertex of either to the other.
fn distance(first: &Geometry, second: &Geometry) -> f64 {
    if let (Geometry::Point(a), Geometry::Point(b)) = (first, second) {
        return Geodesic.distance(*a, *b);
    }
    if first.intersects(second) {
        return 0.0;
    }
    let from_vertices = |vertices: &Geometry, other: &Geometry| {
        vertices
            .coords_iter()
            .map(Point::from)
            .filter_map(|point| match other.haversine_closest_point(&point) {
                Closest::Intersection(_) => Some(0.0),
                Closest::SinglePoint(closest) => Some(Geodesic.distance(point, closest)),
                Closest::Indeterminate => None,
            })
            .fold(f64::INFINITY, f64::min)
    };
    from_vertices(first, second).min(from_vertices(second, first))
}

/// The geodesic area in square meters (zero for points and lines).
fn area(geometry: &Geometry) -> f64 {
    match geometry {
        Geometry::Polygon(polygon) => polygon.geodesic_area_unsigned(),
        Geometry::MultiPolygon(polygons) => polygons.geodesic_area_unsigned(),
        _ => 0.0,
    }
}

/// A GeoJSON value as a geometry, or why it is not a valid one (the reasons are LetheDB's
/// words, the service's where its documentation shows one).
pub(super) fn geometry(value: &Value) -> Result<Geometry, String> {
    let Value::Object(object) = value else {
        return Err("The input is not a GeoJSON object.".into());
    };
    let kind = object
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let coordinates = object
        .get("coordinates")
        .ok_or_else(|| format!("The {kind} has no coordinates."))?;
    match kind {
        "Point" => Ok(Geometry::Point(Point::from(position(coordinates)?))),
        "LineString" => {
            let line = line(coordinates)?;
            if line.0.len() < 2 {
                return Err("A LineString must have at least two positions.".into());
            }
            Ok(Geometry::LineString(line))
        }
        "Polygon" => Ok(Geometry::Polygon(polygon(coordinates)?)),
        "MultiPolygon" => {
            let polygons = list(coordinates, "MultiPolygon")?
                .iter()
                .map(polygon)
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Geometry::MultiPolygon(MultiPolygon::new(polygons)))
        }
        other => Err(format!(
            "The GeoJSON type '{other}' is not one of Point, LineString, Polygon and MultiPolygon."
        )),
    }
}

fn list<'a>(value: &'a Value, what: &str) -> Result<&'a Vec<Value>, String> {
    value
        .as_array()
        .ok_or_else(|| format!("The coordinates of a {what} must be an array."))
}

/// One `[longitude, latitude]` position, in range.
fn position(value: &Value) -> Result<Coord, String> {
    let numbers = list(value, "position")?;
    let (Some(longitude), Some(latitude), 2..=3) = (
        numbers.first().and_then(Value::as_f64),
        numbers.get(1).and_then(Value::as_f64),
        numbers.len(),
    ) else {
        return Err("A position must be an array of two numbers: longitude, latitude.".into());
    };
    if !(-90.0..=90.0).contains(&latitude) {
        return Err("Latitude values must be between -90 and 90 degrees.".into());
    }
    if !(-180.0..=180.0).contains(&longitude) {
        return Err("Longitude values must be between -180 and 180 degrees.".into());
    }
    Ok(Coord {
        x: longitude,
        y: latitude,
    })
}

fn line(value: &Value) -> Result<LineString, String> {
    let positions = list(value, "LineString")?
        .iter()
        .map(position)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(LineString::new(positions))
}

/// A polygon: closed rings of at least four positions, the first the exterior.
fn polygon(value: &Value) -> Result<Polygon, String> {
    let mut rings = list(value, "Polygon")?
        .iter()
        .map(|ring| {
            let ring = line(ring)?;
            if ring.0.len() < 4 || ring.0.first() != ring.0.last() {
                return Err(
                    "A Polygon ring must have at least four positions, the last equal to the first."
                        .to_string(),
                );
            }
            Ok(ring)
        })
        .collect::<Result<Vec<_>, _>>()?
        .into_iter();
    let exterior = rings
        .next()
        .ok_or_else(|| "A Polygon must have at least one ring.".to_string())?;
    Ok(Polygon::new(exterior, rings.collect()))
}
