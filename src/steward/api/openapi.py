"""The OpenAPI document, made to tell the truth about errors.

Every error the API answers is a problem detail (RFC 9457, ``application/problem+json``, made
by :func:`steward.api.common.problem`), but FastAPI documents every operation with its own 422
(``HTTPValidationError``, as ``application/json``), a shape Steward never sends, and nothing
else. :func:`declare_problems` fixes the document in one place, after FastAPI made it: the
``Problem`` schema, and on each operation the problems it can answer with, by rules over what
the operation takes, plus :data:`SPECIAL` for what the rules cannot see. A new route is
covered by the rules as it is added.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from enum import Enum
from typing import Any

from fastapi import FastAPI

from steward.api.common import PROBLEM

Document = dict[str, Any]

BEARER = "HTTPBearer"
"""The security scheme of the API tokens (see :data:`steward.api.common.bearer`)."""
METHODS = frozenset({"get", "put", "post", "delete", "options", "head", "patch", "trace"})
"""The keys of a path item that are operations."""
SAFE_METHODS = frozenset({"get", "head", "options"})
"""What a ``read`` token may do; any other method changes something."""

PROBLEM_SCHEMA: Document = {
    "title": "Problem",
    "description": (
        "A problem detail (RFC 9457), the body of every error response. `errors` is sent "
        "only with a 422."
    ),
    "type": "object",
    "required": ["type", "title", "status", "detail"],
    "properties": {
        "type": {
            "type": "string",
            "format": "uri-reference",
            "description": "The problem type: `about:blank` (the status and title say it all).",
            "examples": ["about:blank"],
        },
        "title": {
            "type": "string",
            "description": (
                "The kind of problem: the name of Steward's error (`NotFound`, `Forbidden`, "
                "`InvalidTransition`, `Conflict`, `UsageError`, ...), or `Invalid request`, "
                "`HTTP error` or `Internal error`."
            ),
            "examples": ["NotFound"],
        },
        "status": {
            "type": "integer",
            "minimum": 400,
            "maximum": 599,
            "description": "The HTTP status code, as sent.",
        },
        "detail": {
            "type": "string",
            "description": "What is wrong, and what to change.",
            "examples": ["goal 'gol_01' not found"],
        },
        "errors": {
            "type": "array",
            "items": {"type": "string"},
            "description": (
                "With a 422 only: each invalid part of the request, as `<where>: <what is "
                "wrong>` (the same as in `detail`, joined by `; `)."
            ),
            "examples": [["title: Field required", "query.limit: Input should be ..."]],
        },
    },
}

VALIDATION_PROBLEM_SCHEMA: Document = {
    "title": "ValidationProblem",
    "description": "The problem of a 422: a request that does not match its schema.",
    "allOf": [
        {"$ref": "#/components/schemas/Problem"},
        {
            "type": "object",
            "required": ["errors"],
            "properties": {"status": {"const": 422}, "errors": {"minItems": 1}},
        },
    ],
}


def _content(schema: str) -> Document:
    return {PROBLEM: {"schema": {"$ref": f"#/components/schemas/{schema}"}}}


def _problem(description: str, schema: str = "Problem") -> Document:
    return {"description": description, "content": _content(schema)}


def _unauthorized(description: str, header: str) -> Document:
    challenge = {"description": header, "required": True, "schema": {"type": "string"}}
    return {**_problem(description), "headers": {"WWW-Authenticate": challenge}}


RESPONSES: Document = {
    "Unauthorized": _unauthorized(
        "No valid token: none sent, or one that is unknown, malformed or revoked.",
        "`Bearer`: send a token as `Authorization: Bearer <token>`.",
    ),
    "Forbidden": _problem("The token may not do this: a `read` token changes nothing."),
    "NotFound": _problem(
        "No such object: it does not exist, or it is someone else's (answered alike)."
    ),
    "InvalidRequest": _problem(
        "The request does not match its schema (parameters or body): `errors` says where.",
        "ValidationProblem",
    ),
    "OtherProblem": _problem(
        "Any other error, as a problem detail: 400 when Steward refuses the request on its "
        "merits (an unknown status, a deadline in the past, ...), 413 when the body, or a value "
        "in it, is beyond a limit (the detail names it), 500 when Steward failed."
    ),
}
"""The problem responses the rules declare, under ``components/responses``."""

_COMMON: dict[int, str] = {
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    422: "InvalidRequest",
}


class Declared(Enum):
    """A status in :data:`SPECIAL` without a response of its own."""

    SHARED = "declared, with the response every operation shares for that status"
    NEVER = "not declared: the operation never answers with that status"


_CHANGED_MEANWHILE = "The skill changed meanwhile (a concurrent change): read it again."

SPECIAL: dict[tuple[str, str], dict[int, Document | Declared]] = {
    # --- object ids outside the path (a filter, a body's goal), looked up as the token's
    # person's: 404 like an id in the path
    ("get", "/effects"): {404: Declared.SHARED},
    ("get", "/stream"): {
        404: Declared.SHARED,
        429: _problem("The person has as many live streams open as allowed: close one first."),
    },
    ("post", "/tasks"): {404: Declared.SHARED},
    ("post", "/triggers"): {404: Declared.SHARED},
    # --- changes the object's state or version may refuse ------------------------------------
    ("patch", "/goals/{goal_id}"): {
        409: _problem("The goal cannot make that status change (e.g. it is closed already)."),
    },
    ("post", "/tasks/{task_id}/control"): {
        409: _problem(
            "The task cannot do that now (it finished already, only a paused task resumes, ...)."
        ),
    },
    ("post", "/tasks/{task_id}/answer"): {
        409: _problem("The task is not waiting for an answer."),
    },
    ("post", "/approvals/{approval_id}/decision"): {
        409: _problem("The approval was decided already, or it expired."),
    },
    ("patch", "/memories/{memory_id}"): {
        409: _problem("The memory changed since `expected_version`: read it again."),
    },
    ("post", "/memory-passes/{pass_id}/decision"): {
        409: _problem(
            "The pass is not held for review any more, or a memory it changes changed meanwhile."
        ),
    },
    ("post", "/skills/{skill}/restore"): {409: _problem(_CHANGED_MEANWHILE)},
    ("post", "/skills/{skill}/archive"): {409: _problem(_CHANGED_MEANWHILE)},
    ("post", "/skills/{skill}/decision"): {409: _problem(_CHANGED_MEANWHILE)},
    ("post", "/channels/apprise"): {
        409: _problem("You have a channel by that name already: choose another name."),
    },
    ("post", "/channels/push"): {
        409: _problem("You have a channel by that name already: choose another name."),
    },
    ("post", "/browser/clear"): {
        409: _problem("A task is using the browser right now: try again when it has finished."),
    },
    # --- any facade method by name (the CLI's remote mode): what the method raises
    ("post", "/call/{method}"): {
        409: _problem(
            "The method's object cannot make that change now, or it changed meanwhile (as on "
            "the method's own route)."
        ),
    },
    # --- the webhook delivery: its signature is the credential --------------------------------
    ("post", "/hooks/{trigger_id}"): {
        401: _unauthorized(
            "The signature is missing or does not match; a trigger that does not exist or has "
            "no secret is refused alike, saying no more.",
            "`Bearer`, as on every 401 (a delivery is signed, though, not sent with a token).",
        ),
        404: Declared.NEVER,
        409: _problem("The trigger is disabled: enable it to take deliveries."),
    },
    ("post", "/hooks/{kind}/{connection_id}"): {
        401: _unauthorized(
            "The provider's proof (GitHub's `X-Hub-Signature-256`, GitLab's `X-Gitlab-Token`) "
            "is missing or wrong; a connection that does not exist is refused alike.",
            "`Bearer`, as on every 401 (a delivery is proved by the provider's scheme, though).",
        ),
        404: Declared.NEVER,
    },
}
"""Per operation, ``(method, path under the prefix)``, what the rules of :func:`problems_of`
cannot see: a status it answers with (its own response, or the shared one), or one it never
answers with although a rule says so (the webhook's unknown trigger is a 401, not a 404).
Every key must name an operation (a test checks it)."""


def declare_problems(doc: Document, *, prefix: str = "") -> Document:
    """``doc``, FastAPI's document, with the problem responses of every operation (in place,
    and returned). ``prefix`` is stripped from paths to look them up in :data:`SPECIAL`."""
    components = doc.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    schemas["Problem"] = copy.deepcopy(PROBLEM_SCHEMA)
    schemas["ValidationProblem"] = copy.deepcopy(VALIDATION_PROBLEM_SCHEMA)
    components["responses"] = {**components.get("responses", {}), **copy.deepcopy(RESPONSES)}
    for path, item in doc.get("paths", {}).items():
        for method, operation in item.items():
            if method not in METHODS:
                continue
            special = copy.deepcopy(SPECIAL.get((method, path.removeprefix(prefix)), {}))
            responses = _responses(operation["responses"], problems_of(method, operation), special)
            for response in responses.values():
                for media in response.get("content", {}).values():
                    _without_item_schema(media)
            operation["responses"] = responses
    for fastapi_own in ("HTTPValidationError", "ValidationError"):
        schemas.pop(fastapi_own, None)
    return doc


def problems_of(method: str, operation: Document) -> set[int]:
    """The problem statuses an operation can answer with, by the rules:

    * 401 when it takes a bearer token (no token, or a bad one);
    * 403 when it also changes something (a ``read`` token is refused);
    * 404 when its path names an object (it is looked up as the token's person's);
    * 422 when it takes a body, or a parameter FastAPI can refuse.
    """
    found: set[int] = set()
    bearer = any(BEARER in each for each in operation.get("security", ()))
    parameters: list[Document] = operation.get("parameters", [])
    if bearer:
        found.add(401)
        if method not in SAFE_METHODS:
            found.add(403)
    if any(p["in"] == "path" for p in parameters):
        found.add(404)
    if "requestBody" in operation or any(_refusable(p) for p in parameters):
        found.add(422)
    return found


_NOTES = frozenset({"title", "description", "default", "examples"})


def _refusable(parameter: Document) -> bool:
    """Whether FastAPI can refuse a value of ``parameter`` (a 422): it is required (but in the
    path, where a route without it does not match), or not just any string."""
    if parameter.get("required") and parameter["in"] != "path":
        return True
    schema: Document = parameter.get("schema", {})
    for option in schema.get("anyOf", [schema]):
        if option.get("type") not in ("string", "null") or set(option) - _NOTES != {"type"}:
            return True
    return False


def _responses(
    declared: Document, statuses: set[int], special: dict[int, Document | Declared]
) -> Document:
    """The success responses FastAPI declared, then the problems in order, then ``default``
    (any other status, e.g. a 400 or a 500, is a problem detail too)."""
    kept = {code: r for code, r in declared.items() if not _fastapi_validation_error(r)}
    problems = {status: _shared(status) for status in statuses}
    for status, response in special.items():
        if response is Declared.NEVER:
            problems.pop(status, None)
        elif response is Declared.SHARED:
            problems[status] = _shared(status)
        else:
            problems[status] = response
    ordered = {str(status): problems[status] for status in sorted(problems)}
    return {**kept, **ordered, "default": {"$ref": "#/components/responses/OtherProblem"}}


def _shared(status: int) -> Document:
    return {"$ref": f"#/components/responses/{_COMMON[status]}"}


def _fastapi_validation_error(response: Document) -> bool:
    return any(
        media.get("schema", {}).get("$ref", "").endswith("/HTTPValidationError")
        for media in response.get("content", {}).values()
    )


def _without_item_schema(media: Document) -> None:
    """An event stream described for OpenAPI 3.1: FastAPI writes OpenAPI 3.2's ``itemSchema``
    (each event), which makes a 3.1 document invalid; the body is text."""
    if media.pop("itemSchema", None) is not None:
        media.setdefault(
            "schema",
            {
                "type": "string",
                "description": "Server-Sent Events (`text/event-stream`), one per entry.",
            },
        )


def install(app: FastAPI, *, prefix: str = "") -> None:
    """Serve ``app``'s document with its problems declared (made once, on first request)."""
    generate: Callable[[], Document] = app.openapi

    def openapi() -> Document:
        if app.openapi_schema is None:
            app.openapi_schema = declare_problems(generate(), prefix=prefix)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
