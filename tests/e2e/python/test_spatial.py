"""Geospatial queries through the Python SDK: a container with a spatial index in its policy,
ST_DISTANCE in meters as filter, projection and ORDER BY, ST_WITHIN and ST_ISVALIDDETAILED; and
the same filters answered alike by a container whose spatial index serves them and one without."""

from azure.cosmos import PartitionKey

from conftest import unique_id

OFFICES = [
    {"id": "hq", "pk": "a", "location": {"type": "Point", "coordinates": [-122.12826822304672, 47.63980239335718]}},
    {"id": "rd", "pk": "b", "location": {"type": "Point", "coordinates": [-96.84368664765994, 46.81297794314663]}},
]
REFERENCE = {"type": "Point", "coordinates": [-122.11758113953535, 47.66901087006131]}


def test_distances_within_and_validity_across_ranges(database):
    container = database.create_container(
        unique_id("geo"), partition_key=PartitionKey(path="/pk"), offer_throughput=12000,
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


def _index_report(container):
    """The index utilization report of the container's last query: the SDK decodes the
    header (base64 JSON) into a dict; a string is decoded here."""
    import base64
    import json

    raw = container.client_connection.last_response_headers["x-ms-cosmos-index-utilization"]
    if isinstance(raw, dict):
        return raw
    return json.loads(base64.b64decode(raw).decode("utf-8"))


def _places(count):
    """Points, lines and polygons around a city, the antimeridian near Fiji and the north pole,
    from a fixed seed so that a failure replays."""
    import random

    rng = random.Random(27)
    centers = [(-122.33, 47.61), (179.95, -16.5), (-179.95, -16.5), (0.0, 89.95)]
    documents = []
    for n in range(count):
        longitude, latitude = centers[n % len(centers)]
        longitude = max(-180.0, min(180.0, longitude + rng.uniform(-0.05, 0.05)))
        latitude = max(-90.0, min(90.0, latitude + rng.uniform(-0.05, 0.05)))
        if n % 10 == 0:
            # Eastwards, except at the antimeridian, where a step east leaves the range.
            step = 0.01 if longitude < 179 else -0.01
            geometry = {"type": "LineString",
                        "coordinates": [[longitude, latitude], [longitude + step, latitude + 0.01]]}
        elif n % 10 == 1:
            side = 0.002
            ring = [[longitude - side, latitude - side], [longitude + side, latitude - side],
                    [longitude + side, latitude + side], [longitude - side, latitude + side],
                    [longitude - side, latitude - side]]
            geometry = {"type": "Polygon", "coordinates": [ring]}
        else:
            geometry = {"type": "Point", "coordinates": [longitude, latitude]}
        documents.append({"id": f"g{n}", "pk": f"p{n % 7}", "location": geometry})
    return documents


def test_a_spatial_index_answers_as_a_container_without_one(database):
    """The same distance, containment and intersection queries with parameters, both argument
    orders, on a container whose policy has a spatial index and on one whose policy has none:
    the same results, and the index metrics name the spatial index where it serves the filter."""
    indexed = database.create_container(
        unique_id("geo-indexed"), partition_key=PartitionKey(path="/pk"), offer_throughput=12000,
        indexing_policy={"spatialIndexes": [{"path": "/location/*", "types": ["Point", "LineString", "Polygon"]}]})
    plain = database.create_container(
        unique_id("geo-plain"), partition_key=PartitionKey(path="/pk"), offer_throughput=12000)
    documents = _places(120)
    for document in documents:
        indexed.create_item(document)
        plain.create_item(document)

    def square(longitude, latitude, side):
        ring = [[longitude - side, latitude - side], [longitude + side, latitude - side],
                [longitude + side, latitude + side], [longitude - side, latitude + side],
                [longitude - side, latitude - side]]
        return {"type": "Polygon", "coordinates": [ring]}

    queries = []
    for document in documents[:24]:
        geometry = document["location"]
        first = geometry["coordinates"] if geometry["type"] == "Point" else (
            geometry["coordinates"][0] if geometry["type"] == "LineString" else geometry["coordinates"][0][0])
        point = {"type": "Point", "coordinates": first}
        for meters in (10, 3000):
            queries.append(("SELECT VALUE c.id FROM c WHERE ST_DISTANCE(c.location, @p) < @r",
                            [{"name": "@p", "value": point}, {"name": "@r", "value": meters}]))
            queries.append(("SELECT VALUE c.id FROM c WHERE @r >= ST_DISTANCE(@p, c.location)",
                            [{"name": "@p", "value": point}, {"name": "@r", "value": meters}]))
        area = [{"name": "@g", "value": square(first[0], first[1], 0.01)}]
        queries.append(("SELECT VALUE c.id FROM c WHERE ST_WITHIN(c.location, @g)", area))
        queries.append(("SELECT VALUE c.id FROM c WHERE ST_INTERSECTS(@g, c.location)", area))
        queries.append(("SELECT VALUE c.id FROM c WHERE ST_INTERSECTS(c.location, @g)", area))
    found = 0
    for text, parameters in queries:
        with_index = sorted(indexed.query_items(text, parameters=parameters, enable_cross_partition_query=True))
        without = sorted(plain.query_items(text, parameters=parameters, enable_cross_partition_query=True))
        assert with_index == without, (text, parameters)
        found += len(with_index)
    # The comparison ran on real answers, not on empty ones.
    assert found > len(queries)

    text, parameters = queries[0]
    partition = documents[0]["pk"]
    list(indexed.query_items(text, parameters=parameters, partition_key=partition, populate_index_metrics=True))
    specs = [entry["IndexSpec"] for entry in _index_report(indexed)["UtilizedSingleIndexes"]]
    assert specs == ["/location/*"]
    list(plain.query_items(text, parameters=parameters, partition_key=partition, populate_index_metrics=True))
    specs = [entry["IndexSpec"] for entry in _index_report(plain)["UtilizedSingleIndexes"]]
    assert specs == ["/location/?"]
