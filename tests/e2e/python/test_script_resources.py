"""Stored procedures, triggers and user-defined functions as resources through the Python SDK
(azure-cosmos 4.17.1): create, read (by id and by the `_self` of a dict), replace, delete, list
and query each kind; a trigger's type and operation echoed as sent; a body that does not
compile stored as sent (as the service does, and as the SDK's own suite expects) and refused
with 400 naming the syntax error when a stored procedure runs."""

from __future__ import annotations

import pytest
from azure.cosmos import exceptions
from azure.cosmos.documents import TriggerOperation, TriggerType

SPROC_BODY = "function () { getContext().getResponse().setBody('hello'); }"
BROKEN_BODY = "function () {\n  var a = 1;\n  a = +;\n}"


def test_stored_procedure_crud_list_and_query(container):
    scripts = container.scripts
    created = scripts.create_stored_procedure({"id": "sp1", "body": SPROC_BODY})
    assert created["id"] == "sp1"
    assert created["body"] == SPROC_BODY
    for name in ("_rid", "_self", "_etag", "_ts"):
        assert name in created, name
    assert created["_self"].endswith(f"/sprocs/{created['_rid']}/")
    with pytest.raises(exceptions.CosmosResourceExistsError):
        scripts.create_stored_procedure({"id": "sp1", "body": SPROC_BODY})

    assert scripts.get_stored_procedure("sp1")["_rid"] == created["_rid"]
    # A dict is addressed by its `_self` link, made of resource ids.
    assert scripts.get_stored_procedure(created)["id"] == "sp1"

    new_body = "function () { getContext().getResponse().setBody('bye'); }"
    replaced = scripts.replace_stored_procedure("sp1", {"id": "sp1", "body": new_body})
    assert replaced["body"] == new_body
    assert replaced["_rid"] == created["_rid"]
    with pytest.raises(exceptions.CosmosResourceNotFoundError):
        scripts.replace_stored_procedure("nope", {"id": "nope", "body": new_body})

    scripts.create_stored_procedure({"id": "sp2", "body": SPROC_BODY})
    assert sorted(s["id"] for s in scripts.list_stored_procedures()) == ["sp1", "sp2"]
    found = list(scripts.query_stored_procedures(
        "SELECT * FROM root r WHERE r.id = @id", parameters=[{"name": "@id", "value": "sp2"}]))
    assert [s["id"] for s in found] == ["sp2"]

    scripts.delete_stored_procedure("sp1")
    with pytest.raises(exceptions.CosmosResourceNotFoundError):
        scripts.get_stored_procedure("sp1")
    with pytest.raises(exceptions.CosmosResourceNotFoundError):
        scripts.delete_stored_procedure("sp1")
    assert [s["id"] for s in scripts.list_stored_procedures()] == ["sp2"]


def test_trigger_crud_echoes_type_and_operation(container):
    scripts = container.scripts
    body = {
        "id": "t1",
        "body": "function () { var item = getContext().getRequest().getBody(); }",
        "triggerType": TriggerType.Pre,
        "triggerOperation": TriggerOperation.All,
    }
    created = scripts.create_trigger(body)
    # The SDK's own tests compare the echo with what was sent.
    assert created["triggerType"] == "pre"
    assert created["triggerOperation"] == "all"
    with pytest.raises(exceptions.CosmosResourceExistsError):
        scripts.create_trigger(body)
    assert scripts.get_trigger("t1")["body"] == body["body"]

    replaced = scripts.replace_trigger("t1", dict(body, triggerType=TriggerType.Post,
                                                  triggerOperation=TriggerOperation.Delete))
    assert (replaced["triggerType"], replaced["triggerOperation"]) == ("post", "delete")
    assert replaced["_rid"] == created["_rid"]

    found = list(scripts.query_triggers("SELECT * FROM root r WHERE r.triggerType = 'post'"))
    assert [t["id"] for t in found] == ["t1"]
    assert [t["id"] for t in scripts.list_triggers()] == ["t1"]

    with pytest.raises(exceptions.CosmosHttpResponseError) as refused:
        scripts.create_trigger({"id": "t2", "body": "function () {}", "triggerType": "during",
                                "triggerOperation": TriggerOperation.All})
    assert refused.value.status_code == 400
    with pytest.raises(exceptions.CosmosHttpResponseError) as refused:
        scripts.create_trigger({"id": "t2", "body": "function () {}"})
    assert refused.value.status_code == 400

    scripts.delete_trigger("t1")
    assert list(scripts.list_triggers()) == []


def test_user_defined_function_crud(container):
    scripts = container.scripts
    body = {"id": "double", "body": "function (x) { return x * 2; }"}
    created = scripts.create_user_defined_function(body)
    assert created["body"] == body["body"]
    with pytest.raises(exceptions.CosmosResourceExistsError):
        scripts.create_user_defined_function(body)
    assert scripts.get_user_defined_function("double")["_rid"] == created["_rid"]
    replaced = scripts.replace_user_defined_function(
        "double", {"id": "double", "body": "function (x) { return x + x; }"})
    assert replaced["body"] == "function (x) { return x + x; }"
    found = list(scripts.query_user_defined_functions(
        "SELECT * FROM root r WHERE r.id = @id", parameters=[{"name": "@id", "value": "double"}]))
    assert [f["id"] for f in found] == ["double"]
    scripts.delete_user_defined_function("double")
    assert list(scripts.list_user_defined_functions()) == []
    with pytest.raises(exceptions.CosmosResourceNotFoundError):
        scripts.get_user_defined_function("double")


def test_a_body_that_does_not_compile_is_stored_as_sent_and_fails_when_it_runs(container):
    scripts = container.scripts
    # What the SDK's own test_encoding stores: prose with a line and a paragraph separator.
    prose = "Line Separator (\u2028) & Paragraph Separator (\u2029) & Next Line (\x85)"
    created = [
        scripts.create_stored_procedure({"id": "bad", "body": BROKEN_BODY}),
        scripts.create_trigger({"id": "bad", "body": BROKEN_BODY,
                                "triggerType": TriggerType.Pre,
                                "triggerOperation": TriggerOperation.Create}),
        scripts.create_user_defined_function({"id": "bad", "body": BROKEN_BODY}),
        scripts.create_stored_procedure({"id": "prose", "body": prose}),
    ]
    assert [script["body"] for script in created] == [BROKEN_BODY] * 3 + [prose]
    assert scripts.get_stored_procedure("prose")["body"] == prose
    with pytest.raises(exceptions.CosmosHttpResponseError) as refused:
        scripts.execute_stored_procedure("bad", partition_key="p")
    assert refused.value.status_code == 400
    assert "SyntaxError" in refused.value.message
    # A replace may store a broken body too; a missing body is refused.
    scripts.create_stored_procedure({"id": "good", "body": SPROC_BODY})
    scripts.replace_stored_procedure("good", {"id": "good", "body": BROKEN_BODY})
    assert scripts.get_stored_procedure("good")["body"] == BROKEN_BODY
    with pytest.raises(exceptions.CosmosHttpResponseError) as refused:
        scripts.replace_stored_procedure("good", {"id": "good"})
    assert refused.value.status_code == 400
    # A script cannot be renamed by a replace.
    with pytest.raises(exceptions.CosmosHttpResponseError) as refused:
        scripts.replace_stored_procedure("good", {"id": "other", "body": SPROC_BODY})
    assert refused.value.status_code == 400
    assert "other" not in [s["id"] for s in scripts.list_stored_procedures()]
