"""The OpenAPI document tells the truth about errors.

Every error is a problem detail (RFC 9457, ``application/problem+json``); the document says
so on every operation (401, 403, 404, 409, 422 where each can happen, and ``default`` for the
rest) and no longer advertises FastAPI's ``HTTPValidationError``, which is never sent. The
document is valid OpenAPI 3.1, it declares every status the contract tests make each route
answer with, and real problem responses of the served API validate against what it declares
for them: the document and the server agree.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any, cast

import httpx
import jsonschema
import pytest
import schemathesis

from api.test_contract import CASES, CONTROL
from steward.api import create_app
from steward.api.app import API_PREFIX
from steward.api.common import PROBLEM
from steward.api.openapi import SPECIAL
from steward.service import Service
from support.api import Api, delivery
from support.clock import START

Document = dict[str, Any]
METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}
PROBLEM_REF = {"$ref": "#/components/schemas/Problem"}


@pytest.fixture(scope="module")
def doc() -> Document:
    return create_app(cast(Service, None)).openapi()  # routes reach the service when called


def operations(doc: Document) -> Iterator[tuple[str, str, Document]]:
    for path, item in doc["paths"].items():
        for method, operation in item.items():
            if method in METHODS:
                yield method, path, operation


def resolve(doc: Document, node: Document) -> Document:
    while "$ref" in node:
        *_, kind, name = node["$ref"].split("/")
        node = doc["components"][kind][name]
    return node


def declared(doc: Document, operation: Document, status: int) -> Document | None:
    """The response ``operation`` declares for ``status``: its own, else ``default``."""
    responses = operation["responses"]
    found = responses.get(str(status), responses.get("default"))
    return None if found is None else resolve(doc, found)


def explicit(doc: Document, operation: Document) -> set[int]:
    return {int(code) for code in operation["responses"] if code.isdigit()}


def refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from refs(value)


# --- the document --------------------------------------------------------------------------


def test_the_document_is_valid_openapi(doc: Document) -> None:
    assert doc["openapi"].startswith("3.1.")
    # the OpenAPI 3.1 schema (the one published with the specification, as schemathesis
    # bundles it), checked with jsonschema-rs
    schemathesis.openapi.from_dict(copy.deepcopy(doc)).validate()
    for name in ("Problem", "ValidationProblem"):
        jsonschema.Draft202012Validator.check_schema(doc["components"]["schemas"][name])
    for ref in set(refs(doc)):
        assert ref.startswith("#/"), ref
        node: Any = doc
        for part in ref[2:].split("/"):
            node = node[part]  # a KeyError is a dangling reference


def test_the_validator_would_catch_a_broken_document(doc: Document) -> None:
    broken = copy.deepcopy(doc)
    del broken["paths"][API_PREFIX + "/goals"]["get"]["responses"]["401"]["$ref"]
    with pytest.raises(Exception, match="description"):
        schemathesis.openapi.from_dict(broken).validate()


def test_fastapis_validation_error_is_gone(doc: Document) -> None:
    text = json.dumps(doc)
    assert "HTTPValidationError" not in text
    assert "#/components/schemas/ValidationError" not in text
    assert "ValidationError" not in doc["components"]["schemas"]


def test_every_error_response_is_a_problem_detail(doc: Document) -> None:
    problems = {"#/components/schemas/Problem", "#/components/schemas/ValidationProblem"}
    for method, path, operation in operations(doc):
        assert "default" in operation["responses"], (method, path)
        for code, response in operation["responses"].items():
            if code.isdigit() and int(code) < 400:
                continue
            content = resolve(doc, response)["content"]
            assert set(content) == {PROBLEM}, (method, path, code)
            assert content[PROBLEM]["schema"]["$ref"] in problems, (method, path, code)
            if code == "422":
                assert content[PROBLEM]["schema"]["$ref"].endswith("/ValidationProblem")


def test_the_problem_schema_is_what_the_handlers_send(doc: Document) -> None:
    schemas = doc["components"]["schemas"]
    problem = schemas["Problem"]
    assert set(problem["required"]) == {"type", "title", "status", "detail"}
    assert set(problem["properties"]) == {"type", "title", "status", "detail", "errors"}
    errors = problem["properties"]["errors"]
    assert (errors["type"], errors["items"]) == ("array", {"type": "string"})
    # a 422 always names its bad fields
    validation = schemas["ValidationProblem"]
    assert PROBLEM_REF in validation["allOf"]
    assert any("errors" in part.get("required", ()) for part in validation["allOf"])


def test_every_operation_declares_401_with_the_problem_schema(doc: Document) -> None:
    checked = 0
    for method, path, operation in operations(doc):
        unauthorized = operation["responses"].get("401")
        assert unauthorized is not None, (method, path)
        response = resolve(doc, unauthorized)
        assert response["content"] == {PROBLEM: {"schema": PROBLEM_REF}}, (method, path)
        assert response["headers"]["WWW-Authenticate"]["required"] is True, (method, path)
        checked += 1
    assert checked > 50, checked


def test_changing_operations_declare_403_and_reads_do_not(doc: Document) -> None:
    for method, path, operation in operations(doc):
        signed = operation.get("security") == []  # the webhook delivery: no token, no scope
        if method in {"get", "head"} or signed:
            assert "403" not in operation["responses"], (method, path)
        else:
            assert "403" in operation["responses"], (method, path)
            response = resolve(doc, operation["responses"]["403"])
            assert response["content"] == {PROBLEM: {"schema": PROBLEM_REF}}, (method, path)


def test_ids_in_the_path_declare_404_and_input_declares_422(doc: Document) -> None:
    for method, path, operation in operations(doc):
        codes = explicit(doc, operation)
        takes = {p["in"] for p in operation.get("parameters", [])}
        signed = operation.get("security") == []  # a delivery: an unknown id is a 401
        if "{" in path and not signed:
            assert 404 in codes, (method, path)
        if "requestBody" in operation or "query" in takes:
            assert 422 in codes, (method, path)
        if not operation.get("parameters") and "requestBody" not in operation:
            assert codes & {404, 422} == set(), (method, path)


def test_conflicts_are_declared_where_a_state_or_version_can_refuse(doc: Document) -> None:
    for route in [
        "patch /goals/{goal_id}",
        "post /tasks/{task_id}/control",
        "post /tasks/{task_id}/answer",
        "post /approvals/{approval_id}/decision",
        "patch /memories/{memory_id}",
        "post /memory-passes/{pass_id}/decision",
        "post /skills/{skill}/decision",
        "post /hooks/{trigger_id}",
    ]:
        method, path = route.split()
        operation = doc["paths"][API_PREFIX + path][method]
        assert "409" in operation["responses"], route
    for method, path, operation in operations(doc):
        if method == "get":
            assert "409" not in operation["responses"], (method, path)


def test_every_special_case_names_an_operation(doc: Document) -> None:
    for method, path in SPECIAL:
        assert method in doc["paths"].get(API_PREFIX + path, {}), (method, path)


def test_the_document_declares_what_the_contract_tests_expect(doc: Document) -> None:
    """Every status the contract tests make a route answer with is declared on it: 401 on
    every route, 403 for a ``read`` token on a change, 404 (or the webhook's 401) for ids that
    name nothing, 422 for a bad body, and each refusal on its merits (a 400 under
    ``default``)."""
    for case in CASES:
        operation = doc["paths"][API_PREFIX + case.route][case.method.lower()]
        expected = {401}
        if case.scope == CONTROL:
            expected.add(403)
        if case.status_for_unknown is not None:
            expected.add(case.status_for_unknown)
        if case.body is not None:
            expected.add(422)
        expected |= {refusal.status for refusal in case.refused}
        for status in expected:
            response = declared(doc, operation, status)
            assert response is not None, (case.id, status)
            assert PROBLEM in response["content"], (case.id, status)
            if status != 400:  # the others are declared by their own status
                assert status in explicit(doc, operation), (case.id, status)


# --- the served API agrees with its document --------------------------------------------------


def assert_as_declared(
    doc: Document, method: str, route: str, answer: httpx.Response
) -> dict[str, Any]:
    """``answer`` is a problem response ``route`` declares: its status (or ``default``), its
    media type, its headers, and a body that validates against the declared schema."""
    operation = doc["paths"][API_PREFIX + route][method]
    response = declared(doc, operation, answer.status_code)
    assert response is not None, (method, route, answer.status_code)
    assert answer.status_code >= 400, answer.text
    media = answer.headers["content-type"].split(";")[0]
    assert media in response["content"], (media, response)
    for name, header in response.get("headers", {}).items():
        if header.get("required"):
            assert name in answer.headers, (name, answer.headers)
    schema = response["content"][media]["schema"]
    body = answer.json()
    jsonschema.validate(body, {**schema, "components": doc["components"]})
    # nothing undeclared either (the schema itself leaves room for extension members)
    assert set(body) <= set(doc["components"]["schemas"]["Problem"]["properties"]), body
    assert body["status"] == answer.status_code, body
    return cast(dict[str, Any], body)


async def served_document(api: Api) -> Document:
    async with api.client(None) as client:
        answer = await client.get("/openapi.json")
    assert answer.status_code == 200, answer.text
    return cast(Document, answer.json())


async def test_real_problems_validate_against_the_document(api: Api) -> None:
    doc = await served_document(api)
    a = api.a
    async with api.client(None) as anonymous:
        no_token = await anonymous.get("/goals")
        forged = await anonymous.post(
            f"/hooks/{a.trigger.id}",
            content=b"{}",
            headers=delivery("whsec_Z3Vlc3NlZA==", b"{}", at=START),
        )
    async with api.client("not-a-token") as stranger:
        bad_token = await stranger.delete(f"/rules/{a.rule.id}")
    async with api.client(a.read) as reader:
        read_only = await reader.post("/goals", json={"title": "Not allowed"})
    async with api.client(a.control) as client:
        unknown = await client.get("/goals/gol_nothing")
        unknown_filter = await client.get("/effects", params={"task_id": "tsk_nothing"})
        bad_body = await client.post("/goals", json={"title": 7, "colour": "red"})
        bad_query = await client.get("/goals", params={"limit": 0})
        bad_path = await client.post(f"/memories/{a.memory.id}/versions/first/restore")
        refused = await client.get("/tasks", params={"status": "nonsense"})
        decided = await client.post(f"/approvals/{a.approval.id}/decision", json={"approve": True})
        assert decided.status_code == 200, decided.text
        twice = await client.post(f"/approvals/{a.approval.id}/decision", json={"approve": True})

    checks = [
        (401, "get", "/goals", no_token),
        (401, "post", "/hooks/{trigger_id}", forged),
        (401, "delete", "/rules/{rule_id}", bad_token),
        (403, "post", "/goals", read_only),
        (404, "get", "/goals/{goal_id}", unknown),
        (404, "get", "/effects", unknown_filter),
        (422, "post", "/goals", bad_body),
        (422, "get", "/goals", bad_query),
        (422, "post", "/memories/{memory_id}/versions/{version}/restore", bad_path),
        (400, "get", "/tasks", refused),
        (409, "post", "/approvals/{approval_id}/decision", twice),
    ]
    for status, method, route, answer in checks:
        assert answer.status_code == status, (route, answer.text)
        body = assert_as_declared(doc, method, route, answer)
        if status == 422:
            assert body["errors"], body
            assert all(error in body["detail"] for error in body["errors"]), body
        else:
            assert "errors" not in body, body
    bad_fields = bad_body.json()["errors"]
    assert any(e.startswith("title:") for e in bad_fields), bad_fields
    assert any(e.startswith("colour:") for e in bad_fields), bad_fields
