"""Geospatial queries through the Python SDK: a container with a spatial index in its policy,
ST_DISTANCE in meters as filter, projection and ORDER BY, ST_WITHIN and ST_ISVALIDDETAILED."""

from azure.cosmos import PartitionKey

from conftest import unique_id

OFFICES = [
    {"id": "hq", "pk": "a", "location": {"type": "Point", "coordinates": [-122.12826822304672, 47.63980239335718]}},
    {"id": "rd", "pk": "b", "location": {"type": "Point", "coordinates": [-96.84368664765994, 46.81297794314663]}},
]
REFERENCE = {"type": "Point", "coordinates": [-122.11758113953535, 47.66901087006131]}


def test_distances_within_and_validity_across_ranges(database):
    container = database.create_container(
        unique_id("geo"), partition_key=PartitionKey(path="/pk"), offer_throughput=20000,
        indexing_policy={"spatialIndexes": [{"path": "/location/*", "types": ["Point", "Polygon"]}]})
    for office in OFFICES:
        container.create_item(office)
    parameters = [{"name": "@ref", "value": REFERENCE}]
    rows = list(container.query_items(
        "SELECT c.id, ST_DISTANCE(c.location, @ref) / 1000 AS km FROM c ORDER BY c.id",
        parameters=parameters, enable_cross_partition_query=True))
    # GeographicLib's WGS 84 inverse problem gives 3.34526974 km and 1907.438342 km.
    assert [row["id"] for row in rows] == ["hq", "rd"]
    assert abs(rows[0]["km"] - 3.34526974) < 1e-6
    assert abs(rows[1]["km"] - 1907.438342) < 1e-5
    near = list(container.query_items("SELECT VALUE c.id FROM c WHERE ST_DISTANCE(c.location, @ref) < 5000",
                                      parameters=parameters, enable_cross_partition_query=True))
    assert near == ["hq"]
    west = {"type": "Polygon", "coordinates": [[[-125, 45], [-110, 45], [-110, 50], [-125, 50], [-125, 45]]]}
    within = list(container.query_items("SELECT VALUE c.id FROM c WHERE ST_WITHIN(c.location, @west)",
                                        parameters=[{"name": "@west", "value": west}],
                                        enable_cross_partition_query=True))
    assert within == ["hq"]
    detailed = list(container.query_items(
        "SELECT VALUE ST_ISVALIDDETAILED({'type': 'Point', 'coordinates': [133.75, -184.38]})",
        enable_cross_partition_query=True))
    assert detailed == [{"valid": False, "reason": "Latitude values must be between -90 and 90 degrees."}]
