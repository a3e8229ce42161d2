"""Users, permissions and resource tokens through the Python SDK (azure-cosmos 4.17.1): CRUD of
users and permissions, clients built from resource tokens (dict and permission-list forms), what
they may and may not do, expiry, the emulator's Entra ID credential over HTTPS, and the empty
conflicts feed."""

from __future__ import annotations

import base64
import email.utils
import json
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest
from azure.core.credentials import AccessToken
from azure.cosmos import CosmosClient, PartitionKey
from azure.cosmos import exceptions

from conftest import make_client, unique_id


def _token_client(server, credential) -> CosmosClient:
    return CosmosClient(server.endpoint, credential=credential, connection_timeout=10,
                        read_timeout=30)


def test_user_crud_query_replace_and_upsert(database):
    user = database.create_user({"id": "ada"})
    props = user.read()
    assert props["_permissions"] == "permissions/"
    with pytest.raises(exceptions.CosmosResourceExistsError):
        database.create_user({"id": "ada"})
    replaced = database.replace_user("ada", {"id": "grace"})
    assert replaced.read()["_rid"] == props["_rid"]
    with pytest.raises(exceptions.CosmosResourceNotFoundError):
        database.get_user_client("ada").read()
    database.upsert_user({"id": "grace"})
    database.upsert_user({"id": "linus"})
    assert sorted(u["id"] for u in database.list_users()) == ["grace", "linus"]
    found = list(database.query_users("SELECT * FROM root r WHERE r.id = @id",
                                      parameters=[{"name": "@id", "value": "linus"}]))
    assert [u["id"] for u in found] == ["linus"]
    database.delete_user("linus")
    assert [u["id"] for u in database.list_users()] == ["grace"]


def test_permission_crud_and_fresh_tokens(database, container):
    user = database.create_user({"id": "ada"})
    body = {"id": "p", "permissionMode": "Read", "resource": container.container_link}
    created = user.create_permission(body)
    token = created.properties["_token"]
    assert token.startswith("type=resource&ver=1&sig=")
    with pytest.raises(exceptions.CosmosResourceExistsError):
        user.create_permission({"id": "q", "permissionMode": "All",
                                "resource": container.container_link})
    # Not required to exist, and a _rid link.
    user.create_permission({"id": "r", "permissionMode": "All",
                            "resource": "dbs/AQAAAA==/colls/AQAAAJ0fgTc="})
    read = user.get_permission("p")
    assert read.properties["_token"].startswith("type=resource&")
    assert sorted(p["id"] for p in user.list_permissions()) == ["p", "r"]
    replaced = user.replace_permission("p", {"id": "p", "permissionMode": "All",
                                             "resource": container.container_link})
    assert replaced.properties["permissionMode"] == "All"
    user.upsert_permission({"id": "p", "permissionMode": "Read",
                            "resource": container.container_link})
    user.delete_permission("r")
    assert [p["id"] for p in user.list_permissions()] == ["p"]


def _read_token(database, container, **kwargs) -> str:
    user = database.create_user({"id": unique_id("u")})
    body = {"id": "p", "permissionMode": "Read", "resource": container.container_link}
    return user.create_permission(body, **kwargs).properties["_token"]


def test_a_read_token_reads_and_queries_and_is_refused_writes(server, database, container):
    container.create_item({"id": "1", "pk": "a"})
    token = _read_token(database, container)
    reader = _token_client(server, {container.container_link: token})
    theirs = reader.get_database_client(database.id).get_container_client(container.id)
    assert theirs.read_item("1", partition_key="a")["id"] == "1"
    assert [i["id"] for i in theirs.query_items("SELECT * FROM c", partition_key="a")] == ["1"]
    assert [i["id"] for i in theirs.read_all_items()] == ["1"]
    with pytest.raises(exceptions.CosmosHttpResponseError) as refused:
        theirs.create_item({"id": "2", "pk": "a"})
    assert refused.value.status_code == 403
    with pytest.raises(exceptions.CosmosHttpResponseError) as refused:
        theirs.delete_item("1", partition_key="a")
    assert refused.value.status_code == 403
    with pytest.raises(exceptions.CosmosHttpResponseError) as refused:
        reader.get_database_client(database.id).delete_container(container.id)
    assert refused.value.status_code == 403


def test_a_permission_list_client_reads_the_account(server, database, container):
    """The permission-list form keys each token by the last segment of its `resource`, which
    4.17.1 matches only against rid-addressed requests; the account read at start-up uses the
    first token, so building the client proves the token is accepted there."""
    user = database.create_user({"id": unique_id("u")})
    permission = user.create_permission({"id": "p", "permissionMode": "Read",
                                         "resource": container.container_link}).properties
    reader = _token_client(server, [permission])
    assert reader.get_database_account() is not None


def test_a_partition_scoped_token_is_refused_another_key(server, database, container):
    user = database.create_user({"id": unique_id("u")})
    token = user.create_permission({"id": "p", "permissionMode": "All",
                                    "resource": container.container_link,
                                    "resourcePartitionKey": ["a"]}).properties["_token"]
    writer = _token_client(server, {container.container_link: token})
    theirs = writer.get_database_client(database.id).get_container_client(container.id)
    theirs.create_item({"id": "1", "pk": "a"})
    with pytest.raises(exceptions.CosmosHttpResponseError) as refused:
        theirs.create_item({"id": "2", "pk": "b"})
    assert refused.value.status_code == 403
    theirs.delete_item("1", partition_key="a")


def test_no_credentials_is_401(server):
    with pytest.raises(exceptions.CosmosHttpResponseError) as refused:
        list(_token_client(server, {}).list_databases())
    assert refused.value.status_code == 401


def test_an_expired_token_is_403(server, database, container):
    token = _read_token(database, container, resource_token_expiry_seconds=1)
    time.sleep(2.5)
    # The client's first request (the account) already carries the expired token.
    with pytest.raises(exceptions.CosmosHttpResponseError) as refused:
        _token_client(server, {container.container_link: token})
    assert refused.value.status_code == 403


def test_the_conflicts_feed_is_empty(container):
    assert list(container.list_conflicts()) == []
    assert list(container.query_conflicts("SELECT * FROM c", enable_cross_partition_query=True)) == []
    assert list(container.query_conflicts("SELECT * FROM c", partition_key="a")) == []
    # Neither a key nor consent to read across partitions: the service's 400, as for items.
    with pytest.raises(exceptions.CosmosHttpResponseError) as refused:
        list(container.query_conflicts("SELECT * FROM c"))
    assert refused.value.status_code == 400
    with pytest.raises(exceptions.CosmosResourceNotFoundError):
        container.get_conflict("x", partition_key="a")


class EmulatorCredential:
    """The emulator's Entra ID credential: an unsigned JWT whose signature part is the key."""

    def __init__(self, key: str):
        self.key = key

    def get_token(self, *scopes, **kwargs) -> AccessToken:
        def part(data) -> str:
            raw = data if isinstance(data, bytes) else json.dumps(data).encode()
            return base64.urlsafe_b64encode(raw).decode().rstrip("=")
        now = int(time.time())
        header = {"typ": "JWT", "alg": "RS256", "x5t": "CosmosEmulatorPrimaryMaster",
                  "kid": "CosmosEmulatorPrimaryMaster"}
        claims = {"aud": "https://localhost.localhost", "iat": now, "nbf": now,
                  "exp": now + 7200, "tid": "EmulatorFederation", "ver": "1.0"}
        token = ".".join([part(header), part(claims), part(self.key.encode())])
        return AccessToken(token, now + 7200)


@pytest.fixture(scope="module")
def tls_server(start_server):
    return start_server(tls=True)


def test_the_emulator_entra_credential_works_over_https(tls_server):
    """As the SDK's own emulator test: data operations work, management ones are 403."""
    admin = make_client(tls_server)
    database = admin.create_database(unique_id("db"))
    database.create_container("c", partition_key=PartitionKey("/pk"))
    client = make_client(tls_server, credential=EmulatorCredential(tls_server.key))
    container = client.get_database_client(database.id).get_container_client("c")
    container.create_item({"id": "1", "pk": "a"})
    assert container.read_item("1", partition_key="a")["id"] == "1"
    assert [i["id"] for i in container.query_items("SELECT * FROM c", partition_key="a")] == ["1"]
    container.delete_item("1", partition_key="a")
    with pytest.raises(exceptions.CosmosHttpResponseError) as refused:
        client.delete_database(database.id)
    assert refused.value.status_code == 403
    assert refused.value.sub_status == 5300
    with pytest.raises(exceptions.CosmosHttpResponseError) as refused:
        client.create_database(unique_id("db"))
    assert refused.value.status_code == 403
    admin.delete_database(database.id)


def test_entra_tokens_are_refused_over_http(server):
    """azure-core itself will not send a bearer token over HTTP, so the header is sent by hand."""
    token = EmulatorCredential(server.key).get_token("https://cosmos.azure.com/.default").token
    request = urllib.request.Request(server.endpoint, headers={
        "authorization": urllib.parse.quote(f"type=aad&ver=1.0&sig={token}", safe=""),
        "x-ms-date": email.utils.formatdate(usegmt=True), "x-ms-version": "2020-07-15"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 401
    assert "only over HTTPS" in json.loads(refused.value.read())["message"]
