#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets other than parse_query (fuzz/seeds/<target>/).

Real shapes: bodies and headers as the SDKs send them, signatures made with the emulator's
well-known key, tokens in LetheDB's own formats. Run from anywhere; it rewrites the seed
directories it owns (binary_json, item_body, authorization, continuation, patch, batch, resource_path,
search_policy).
"""
import base64
import hashlib
import hmac
import json
import pathlib
import shutil
import urllib.parse

HERE = pathlib.Path(__file__).resolve().parent
KEY = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="
DATE = "Fri, 15 Jan 2027 08:00:00 GMT"


def write(target, seeds):
    directory = HERE / target
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    for number, seed in enumerate(seeds, 1):
        data = seed if isinstance(seed, bytes) else seed.encode()
        (directory / f"seed_{number:02}").write_bytes(data)


def compact(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def item_body():
    bodies = [
        {"id": "1", "pk": "a"},
        {"id": "item-2", "pk": 42, "name": "Widget", "price": 9.99, "tags": ["x", "y"]},
        {"id": "3", "a": {"b": "nested"}, "n": 1},
        {"id": "4", "a": {"b": 1.5e300}},
        {"id": "5", "tenant": "t1", "user": "u1", "session": "s1"},
        {"id": "6", "tenant": "t1", "user": "u1"},
        {"id": "7", "tenant": "t1", "user": 7, "session": None},
        {"id": "8", "pk": None},
        {"id": "9", "pk": True, "ttl": 60},
        {"id": "10", "pk": "a", "ttl": -1},
        {"id": "11", "pk": "a", "ttl": 0},
        {"id": "12", "pk": "a", "ttl": 2147483647},
        {"id": "13", "pk": "a", "ttl": 1e300},
        {"id": "14", "pk": "a", "ttl": "60"},
        {"id": "15", "pk": "a", "_rid": "AQAAAA==", "_etag": "\"x\"", "_ts": 1, "_self": "x"},
        {"id": "ünïcødé 名前", "pk": "ключ"},
        {"id": "17", "pk": "a" * 120},
        {"id": "18", "pk": ["array", "pk"]},
        {"id": "19", "pk": {"object": "pk"}},
        {"id": "20", "pk": -0.0, "n": 18446744073709551615},
        {"id": "21", "pk": -9007199254740993},
        {"id": "22", "_partitionKey": "sys"},
        {"id": "a/b", "pk": "slash"},
        {"id": "with space ", "pk": "a"},
        {"id": "", "pk": "a"},
        {"id": 5, "pk": "a"},
        {"pk": "no id"},
        {"id": "28", "pk": "a", "deep": [[[[{"x": [1, [2, [3]]]}]]]]},
        {"id": "29", "a": {"b": {"c": 1}}, "tenant": [], "user": {}},
        {"id": "30", "pk": "\u0000\ud7ff\uffff"},
    ]
    seeds = [compact(body) for body in bodies]
    seeds += ["[]", "{}", "null", '"text"', "[1, 2]"]
    # The partition key header's JSON text.
    seeds += ['["a"]', "[42]", "[true]", "[null]", "[{}]", '["t1","u1","s1"]', '["t1","u1"]',
              "[1.0, -0.0, 1e308]", '[[1]]', '[{"a":1}]', '"a"']
    return seeds


def sign(verb, kind, link, date):
    text = f"{verb.lower()}\n{kind.lower()}\n{link}\n{date.lower()}\n\n"
    mac = hmac.new(base64.b64decode(KEY), text.encode(), hashlib.sha256).digest()
    return base64.b64encode(mac).decode()


def master_header(verb, kind, link, date):
    token = f"type=master&ver=1.0&sig={sign(verb, kind, link, date)}"
    return urllib.parse.quote(token, safe="")


def resource_token(fields):
    payload = "\n".join(str(field) for field in fields).encode()
    mac = hmac.new(base64.b64decode(KEY), b"lethedb resource token v1\n" + payload,
                   hashlib.sha256).digest()
    return (f"type=resource&ver=1&sig={base64.b64encode(mac).decode()};"
            f"{base64.b64encode(payload).decode()};")


def b64url(text):
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def entra(claims, key_text=KEY):
    header = '{"typ":"JWT","alg":"RS256","x5t":"CosmosEmulatorPrimaryMaster","kid":"CosmosEmulatorPrimaryMaster"}'
    return "type=aad&ver=1.0&sig=" + ".".join([b64url(header), b64url(claims), b64url(key_text)])


def authorization():
    rfc = "Fri, 15 Jan 2027 08:00:00 GMT"
    fields = ["AQAAAA==", "AQAAAAAAAAA=", "AQAAAAAAAAAAAAAAAAAAAg==",
              '"00000003-0000-0000-0000-000000000001"', 1800000000, 1800003600]
    headers = [
        master_header("GET", "docs", "dbs/db1/colls/c1/docs/item1", rfc),
        master_header("POST", "dbs", "", rfc),
        master_header("GET", "", "", rfc),
        master_header("PUT", "colls", "dbs/db 1/colls/c", rfc),
        "type=master&ver=1.0&sig=" + sign("GET", "dbs", "dbs/db1", rfc),
        "type%3Dmaster%26ver%3D1.0%26sig%3DAAAA",
        "type=master&ver=1.0&sig=",
        "type=master&ver=1.0&sig=not base64!",
        "type=master",
        "sig=%%%",
        "type=master&sig=YWJj&sig=YWJj&type=resource",
        resource_token(fields),
        urllib.parse.quote(resource_token(fields), safe="-_.!~*'()"),
        resource_token(["", "", "", "", -1, 9223372036854775807]),
        "type=resource&ver=1&sig=YWJj;YWJj;",
        "type=resource&ver=1&sig=YWJj;YWJj;extra;",
        "TYPE=RESOURCE&ver=1&sig=x",
        entra('{"aud":"https://localhost.localhost","iat":1800000000,"nbf":1800000000,"exp":1800003600,"tid":"EmulatorFederation"}'),
        entra('{"exp":1e300}'),
        entra('{"exp":1800003600,"nbf":-1e300}'),
        entra('{"exp":1800003600}', key_text="AAAA"),
        "type=aad&ver=1.0&sig=a.b",
        "type=aad&ver=1.0&sig=e30.e30.e30",
    ]
    seeds = [f"{rfc}\n{header}" for header in headers]
    seeds += headers[:4]
    # The header line also serves as resource-token fields and Entra ID claims.
    seeds += [
        f"{rfc}\n" + "\n".join(str(field) for field in fields),
        f"{rfc}\n" + '{"exp":1800003600,"nbf":1799999000}',
        f"{rfc}\n" + '{"exp":9.3e18}',
        f"{rfc}\n" + '{"exp":-9.3e18,"nbf":9.3e18}',
        "Thu, 01 Jan 1970 00:00:00 GMT\n" + master_header("GET", "dbs", "dbs/db1", "Thu, 01 Jan 1970 00:00:00 GMT"),
        "not a date\n" + master_header("GET", "dbs", "dbs/db1", "not a date"),
        "\n",
        "",
    ]
    return seeds


def continuation():
    positions = [
        {"m": "s", "a": None, "t": None, "k": 0, "p": 0},
        {"m": "s", "a": "00", "t": None, "k": 0, "p": 1},
        {"m": "s", "a": "01", "t": "02", "k": 1, "p": 2},
        {"m": "s", "a": "ff" * 8, "t": None, "k": 18446744073709551615, "p": 18446744073709551615},
        {"m": "o", "l": None, "p": 0},
        {"m": "o", "l": {"s": [[1]], "k": "00", "r": 0}, "p": 1},
        {"m": "o", "l": {"s": [["a"], []], "k": "03", "r": 0}, "p": 2},
        {"m": "o", "l": {"s": [[{"x": [1]}]], "k": "", "r": 4294967296}, "p": 3},
        {"m": "a", "i": 0},
        {"m": "a", "i": 2},
        {"m": "a", "i": 18446744073709551615},
        {"m": "x"},
        {"m": "s", "a": "0", "k": -1, "p": 1.5},
    ]
    seeds = [compact(position) for position in positions]
    fingerprint = "0123456789abcdef"
    for position in positions[:6]:
        token = dict(position, v=1, f=fingerprint)
        seeds.append(base64.urlsafe_b64encode(compact(token).encode()).decode().rstrip("="))
    seeds += [
        '"1"', "1", "0", "18446744073709551615", "-1", "1800000000000",
        "AAAAAQ", "AAAAAgAAAAE", "____", "A", "a+b/c=", "",
        '[{"token":"-RID:~AQAAAA==#RT:1#TRC:1#ISV:2#IEO:65567","range":{"min":"","max":"FF"}}]',
        '{"Version":"v2","Rid":"AQAAAA==","Continuation":[{"FeedRange":{"type":"Effective Partition Key Range","value":{"min":"","max":"FF"}},"State":{"type":"continuation","value":"\\"5\\""}}]}',
    ]
    return seeds


def patch():
    operations = [
        [{"op": "add", "path": "/new", "value": 1}],
        [{"op": "set", "path": "/n", "value": "changed"}],
        [{"op": "replace", "path": "/n", "value": None}],
        [{"op": "remove", "path": "/tags"}],
        [{"op": "incr", "path": "/n", "value": 5}],
        [{"op": "incr", "path": "/n", "value": 1.5e308}],
        [{"op": "incr", "path": "/n", "value": -9223372036854775808}],
        [{"op": "move", "from": "/tags", "path": "/labels"}],
        [{"op": "move", "from": "/nested", "path": "/nested/k/inner"}],
        [{"op": "add", "path": "/tags/-", "value": "z"}],
        [{"op": "add", "path": "/tags/0", "value": "first"}],
        [{"op": "remove", "path": "/tags/5"}],
        [{"op": "set", "path": "/nested/k/1/z", "value": [1, 2]}],
        [{"op": "add", "path": "/a~1b/c~0d", "value": {}}],
        [{"op": "set", "path": "/a/b", "value": "moves partition"}],
        [{"op": "set", "path": "/id", "value": "renamed"}],
        [{"op": "set", "path": "/_ts", "value": 1}],
        [{"op": "set", "path": "/", "value": 1}],
        [{"op": "Set", "path": "/big", "value": "x" * 200}],
        [{"op": "unknown", "path": "/n"}],
        [{"op": "set", "path": "/n", "value": 1}] * 10,
        [{"op": "set", "path": "/n", "value": 1}] * 11,
        [{"op": "remove", "path": "/n"}, {"op": "add", "path": "/n", "value": 2}, {"op": "incr", "path": "/n", "value": 1}],
    ]
    seeds = [compact({"operations": list_}) for list_ in operations]
    seeds += [compact(list_) for list_ in operations[:4]]
    seeds += [
        compact({"condition": "FROM c WHERE c.n > 0", "operations": operations[1]}),
        compact({"condition": "FROM c WHERE c.n > 100", "operations": operations[1]}),
        compact({"condition": "from c where not", "operations": operations[1]}),
        compact({"condition": "SELECT * FROM c WHERE ARRAY_LENGTH(c.tags) = 2", "operations": operations[9]}),
        "[]", "{}", '{"operations":{}}', "null",
    ]
    return seeds


def batch():
    a = '["a"]'
    operations = [
        [{"operationType": "Create", "resourceBody": {"id": "new", "a": {"b": "a"}}}],
        [{"operationType": "Upsert", "resourceBody": {"id": "one", "a": {"b": "a"}, "n": 10}}],
        [{"operationType": "Read", "id": "one"}],
        [{"operationType": "Replace", "id": "two", "resourceBody": {"id": "two", "a": {"b": "a"}}}],
        [{"operationType": "Delete", "id": "four"}],
        [{"operationType": "Patch", "id": "one", "resourceBody": {"operations": [{"op": "incr", "path": "/n", "value": 1}]}}],
        [{"operationType": "Create", "resourceBody": {"id": "x", "a": {"b": "a"}}},
         {"operationType": "Create", "resourceBody": {"id": "x", "a": {"b": "a"}}}],
        [{"operationType": "Create", "resourceBody": {"id": "y", "a": {"b": "a"}}},
         {"operationType": "Delete", "id": "missing"}],
        [{"operationType": "Create", "resourceBody": {"id": "z", "a": {"b": "other"}}}],
        [{"operationType": "Replace", "id": "one", "ifMatch": "\"stale\"", "resourceBody": {"id": "one", "a": {"b": "a"}}}],
        [{"operationType": "Upsert", "partitionKey": a, "resourceBody": {"id": "bulk", "a": {"b": "a"}}}],
        [{"operationType": "Upsert", "partitionKey": '["b"]', "resourceBody": {"id": "bulk", "a": {"b": "b"}}},
         {"operationType": "Read", "partitionKey": '["b"]', "id": "three"}],
        [{"operationType": "Create", "partitionKey": "[{}]", "resourceBody": {"id": "u"}}],
        [{"operationType": "Create", "partitionKey": "not json", "resourceBody": {"id": "u"}}],
        [{"operationType": "Create", "partitionKey": ["a"], "resourceBody": {"id": "u", "a": {"b": "a"}}}],
        [{"operationType": "Create"}],
        [{"operationType": "Read"}],
        [{"operationType": "Unknown", "id": "one"}],
        [{"operationType": "Create", "resourceBody": {"id": "t", "a": {"b": "a"}, "ttl": 5}},
         {"operationType": "Patch", "id": "t", "resourceBody": {"operations": [{"op": "set", "path": "/ttl", "value": -1}]}}],
        [{"operationType": "Delete", "id": "one"}, {"operationType": "Create", "resourceBody": {"id": "one", "a": {"b": "a"}}},
         {"operationType": "Read", "id": "one"}],
        [{"operationType": "Patch", "id": "one", "resourceBody": {"operations": [{"op": "set", "path": "/a/b", "value": "b"}]}}],
        [{"operationType": "Create", "resourceBody": {"id": "v", "a": {"b": "a"}}}] * 100,
        [{"operationType": "Read", "id": "one"}] * 101,
    ]
    seeds = [compact(list_) for list_ in operations]
    seeds += ["[]", "{}", "null", "[1]", "[{}]"]
    return seeds


def resource_path():
    return [
        "/", "", "/dbs", "/dbs/", "/dbs/db1", "/dbs/db1/colls", "/dbs/db1/colls/c1",
        "/dbs/db1/colls/c1/docs", "/dbs/db1/colls/c1/docs/item1",
        "/dbs/db1/colls/c1/docs/item1/attachments/a1",
        "/dbs/db1/colls/c1/sprocs/sp1", "/dbs/db1/colls/c1/triggers", "/dbs/db1/colls/c1/udfs/f",
        "/dbs/db1/colls/c1/pkranges", "/dbs/db1/colls/c1/operations/partitionkeydelete",
        "/dbs/db1/users/u1/permissions/p1", "/dbs/db1/users", "/offers", "/offers/AbCd",
        "/dbs/AQAAAA==/colls/AQAAAAAAAAA=/docs/AQAAAAAAAAABAAAAAAAAAA==/",
        "//dbs//db1///colls/c1/", "/dbs/db%201/colls/c%2F1/docs/%C3%A4",
        "/dbs/%FF/colls", "/dbs/%/colls/%zz", "/dbs/db1/colls/c1/docs/item1/attachments/a1/x/y",
        "/dbs/a/colls/b/docs/c/d/e/f/g", "/dbs/db1/colls/c1/conflicts",
        "/dbs/db1/colls/c1/partitionkeyrangeids", "/unknown/x", "/dbs/db1/unknown",
        "/dbs/db1/colls/c1/docs/item%00", "/dbs/db1/colls/c1/docs/" + "x" * 300,
        "/dbs/db1/colls/c1/docs/ä/", "/_lethedb/stats", "/metrics",
    ]


def binary_json():
    """Bodies the Rust SDK's encoder wrote (the server's decoder fixtures) and one buffer per
    compact form the SDK does not write: dictionary, compressed and reference strings, GUIDs,
    base64, uniform number arrays, every container frame."""
    fixtures = HERE.parents[1] / "crates/lethedb-server/src/binary_json/fixtures/sdk_encoded.json"
    seeds = [bytes.fromhex(f["binary"]) for f in json.loads(fixtures.read_text())]
    hand = [
        "80 E2 05 82 61 62 C3 03", "80 EA 04 81 6B C3 03", "80 75 " + "01 23 45 67 89 AB CD EF" * 2,
        "80 D3 " + "33 22 11 00 55 44 77 66 88 99 AA BB CC DD EE FF", "80 71 01 FD 61",
        "80 74 01 00 00 FF FF FF", "80 78 05 21 43 05", "80 7A 06 32 4B F1", "80 7C 04 A9 1A 68 00",
        "80 7D 04 41 40 20 0C", "80 7F 02 00 EF 35", "80 F3 F1 D8 01 00 02 00 FF 01",
        "80 F0 CD 01 00 00 20 40", "80 EF 04 00 00 00 02 00 00 00 2C 01 3B 02",
        "80 E9 81 61 E1 E8", "80 DF 02 00 00 00 FF FE", "80 C7 FF FF FF FF FF FF FF FF",
    ]
    return seeds + [bytes.fromhex(h) for h in hand]


def search_policy():
    """Container policies as the SDKs' search tests send them, valid and not."""
    embedding = {"path": "/v", "dataType": "float32", "dimensions": 3, "distanceFunction": "cosine"}
    shapes = [
        {"vectorEmbeddingPolicy": {"vectorEmbeddings": [embedding]},
         "indexingPolicy": {"vectorIndexes": [{"path": "/v", "type": "flat"}]}},
        {"vectorEmbeddingPolicy": {"vectorEmbeddings": [
            dict(embedding, path="/a", dataType="int8", distanceFunction="dotproduct"),
            dict(embedding, path="/b", dataType="uint8", dimensions=512, distanceFunction="euclidean")]},
         "indexingPolicy": {"vectorIndexes": [
             {"path": "/a", "type": "quantizedFlat", "quantizationByteSize": 2},
             {"path": "/b", "type": "diskANN", "indexingSearchListSize": 100, "vectorIndexShardKey": ["/pk"]}],
             "excludedPaths": [{"path": "/a/*"}, {"path": "/b/*"}]}},
        {"vectorEmbeddingPolicy": {"vectorEmbeddings": [dict(embedding, dimensions=0)]}},
        {"indexingPolicy": {"vectorIndexes": [{"path": "/vector1", "type": "flat"}]}},
        {"indexingPolicy": {"vectorIndexes": [{"path": "/v", "type": "diskANN", "quantizationByteSize": 0}]},
         "vectorEmbeddingPolicy": {"vectorEmbeddings": [embedding]}},
        {"fullTextPolicy": {"defaultLanguage": "en-US", "fullTextPaths": [{"path": "/text", "language": "en-US"}]},
         "indexingPolicy": {"fullTextIndexes": [{"path": "/text"}]}},
        {"fullTextPolicy": {"defaultLanguage": "xx-XX", "fullTextPaths": [{"path": "text"}]}},
        {"indexingPolicy": {"spatialIndexes": [{"path": "/location/*", "types": ["Point", "Polygon"]}]}},
        [embedding],
        {"vectorEmbeddingPolicy": None, "fullTextPolicy": {}, "indexingPolicy": []},
    ]
    return [compact(shape) for shape in shapes]


def main():
    write("search_policy", search_policy())
    write("binary_json", binary_json())
    write("item_body", item_body())
    write("authorization", authorization())
    write("continuation", continuation())
    write("patch", patch())
    write("batch", batch())
    write("resource_path", resource_path())


if __name__ == "__main__":
    main()
