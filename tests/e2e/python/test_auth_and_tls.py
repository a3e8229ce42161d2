"""Authorization (a wrong master key is refused) and HTTPS with the generated certificate."""

import base64
import json
import ssl
import urllib.error
import urllib.request

import pytest
from azure.cosmos import CosmosClient, PartitionKey
from azure.cosmos.exceptions import CosmosHttpResponseError

from conftest import make_client, unique_id
from lethedb_server import free_port

# Valid base64 of the right length, but not the server's key.
WRONG_KEY = base64.b64encode(bytes(range(64))).decode()


def test_wrong_key_is_401(server):
    with pytest.raises(CosmosHttpResponseError) as error:
        client = make_client(server, credential=WRONG_KEY)
        client.get_database_client("anything").read()
    assert error.value.status_code == 401


def test_unsigned_request_is_401_with_a_cosmos_error_body(server):
    with pytest.raises(urllib.error.HTTPError) as error:
        urllib.request.urlopen(server.endpoint + "dbs", timeout=10)
    assert error.value.code == 401
    body = json.loads(error.value.read())
    assert body["code"] == "Unauthorized"
    assert body["message"]


def test_right_key_works_after_a_wrong_key_was_refused(server, client):
    with pytest.raises(CosmosHttpResponseError):
        make_client(server, credential=WRONG_KEY)
    database_id = unique_id("db")
    client.create_database(database_id)
    client.delete_database(database_id)


@pytest.fixture(scope="module")
def tls_server(start_server):
    return start_server(tls=True)


def test_https_create_and_read(tls_server):
    assert tls_server.endpoint.startswith("https://")
    client = make_client(tls_server, connection_verify=False)
    database = client.create_database(unique_id("db"))
    container = database.create_container("secure", partition_key=PartitionKey(path="/pk"))
    container.create_item({"id": "a", "pk": "p", "secret": 42})
    assert container.read_item("a", partition_key="p")["secret"] == 42
    assert [row["id"] for row in container.query_items("SELECT * FROM c", partition_key="p")] == ["a"]


def test_https_serves_the_downloadable_certificate(tls_server):
    insecure = ssl._create_unverified_context()
    with urllib.request.urlopen(tls_server.endpoint + "_explorer/emulator.pem", timeout=10,
                                context=insecure) as response:
        pem = response.read().decode()
    assert pem.startswith("-----BEGIN CERTIFICATE-----")
    end = "-----END CERTIFICATE-----"
    first_certificate = pem[:pem.index(end) + len(end)]
    served = ssl.get_server_certificate(("127.0.0.1", tls_server.port))
    assert ssl.PEM_cert_to_DER_cert(served) == ssl.PEM_cert_to_DER_cert(first_certificate)


def _advertised(client) -> list:
    account = client.get_database_account()
    return [location["databaseAccountEndpoint"]
            for location in account.WritableLocations + account.ReadableLocations]


def test_the_account_advertises_the_bound_address_not_the_host_the_client_used(server):
    # The client reaches the server as localhost; the account still names the configured one.
    localhost = CosmosClient(server.endpoint.replace("127.0.0.1", "localhost"),
                             credential=server.key, connection_timeout=10)
    assert _advertised(localhost) == [server.endpoint, server.endpoint]
    database = localhost.create_database(unique_id("db"))
    localhost.delete_database(database.id)


def test_advertise_url_is_where_the_sdk_sends_requests(start_server):
    advertised = start_server(extra_args=["--advertise-url", "http://localhost:{port}"])
    client = make_client(advertised)
    want = f"http://localhost:{advertised.port}/"
    assert _advertised(client) == [want, want]
    database = client.create_database(unique_id("db"))
    container = database.create_container("c", partition_key=PartitionKey(path="/pk"))
    container.create_item({"id": "a", "pk": "p"})
    assert container.read_item("a", partition_key="p")["id"] == "a"


def test_advertise_url_with_tls_is_https(start_server):
    advertised = start_server(tls=True, extra_args=["--advertise-url", "localhost:{port}"])
    client = make_client(advertised)
    want = f"https://localhost:{advertised.port}/"
    assert _advertised(client) == [want, want]


def test_the_compute_gateway_over_https_serves_ids_the_routing_gateway_refuses(start_server):
    """`--compute-gateway-port` with `--tls`: the second endpoint speaks HTTPS too and reads an
    id holding a `%xx` sequence as sent (200), where the main endpoint answers 401 as the service's
    routing gateway does (docs/compatibility.md, "Create")."""
    gateway_port = free_port()
    main = start_server(tls=True, extra_args=["--compute-gateway-port", str(gateway_port)])
    database = make_client(main).create_database(unique_id("db"))
    container = database.create_container("ids", partition_key=PartitionKey(path="/pk"))
    container.create_item({"id": "Test%2Fid", "pk": "p"})
    with pytest.raises(CosmosHttpResponseError) as refused:
        container.read_item("Test%2Fid", partition_key="p")
    assert refused.value.status_code == 401
    gateway = CosmosClient(f"https://127.0.0.1:{gateway_port}/", main.key, connection_verify=False,
                           connection_timeout=10, read_timeout=30)
    assert gateway.get_database_account().WritableLocations[0]["databaseAccountEndpoint"].endswith(
        f":{gateway_port}/")
    served = gateway.get_database_client(database.id).get_container_client("ids")
    assert served.read_item("Test%2Fid", partition_key="p")["id"] == "Test%2Fid"
    served.delete_item("Test%2Fid", partition_key="p")
    assert list(container.query_items("SELECT * FROM c", partition_key="p")) == []
