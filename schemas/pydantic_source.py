"""Read a schema from a Pydantic model named as `package.module:Model`.

Users often have the model already. Pydantic's JSON Schema says nearly everything Formwork needs:
`Optional[X]` becomes `anyOf [X, null]`, `Literal` and `Enum` become `enum`/`const`, `Field(description=,
max_length=)` become `description` and `maxLength`, nested models and `list[Model]` go to `$defs` with
`$ref`. The normaliser inlines those references and makes defaulted (optional) fields required and
nullable like any other schema, so nothing here is special-cased.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from typing import TYPE_CHECKING, Any

from formwork.schemas.problems import SchemaProblem

if TYPE_CHECKING:
    from pydantic import BaseModel

SPEC = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


def is_model_spec(text: str) -> bool:
    """True for `package.module:Model` (a Python import path, a colon, an attribute path)."""
    return bool(SPEC.match(text))


def model_schema(spec: str) -> dict[str, Any]:
    """The validation JSON Schema of the Pydantic model `spec` names; raise SchemaProblem."""
    from pydantic import BaseModel

    module_name, _, attribute = spec.partition(":")
    try:
        target: Any = _imported(module_name)
    except ImportError as exc:
        raise SchemaProblem(f"{spec}: cannot import module {module_name!r}: {exc}") from exc
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise SchemaProblem(f"{spec}: module {module_name!r} has no {attribute!r}")
        target = getattr(target, part)
    if not (isinstance(target, type) and issubclass(target, BaseModel)):
        raise SchemaProblem(f"{spec}: {attribute!r} is not a Pydantic model (a BaseModel subclass)")
    return class_body(target, spec)


def _imported(module_name: str) -> Any:
    """The module, from the installed packages or else from the working directory: the `formwork`
    command does not import from it, and a user's model sits there (`--schema tickets:Ticket` beside
    tickets.py). The directory goes last on the path, so a file there never shadows a package."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        here = os.getcwd()
        if exc.name != module_name.split(".")[0] or here in sys.path:
            raise
    sys.path.append(here)
    return importlib.import_module(module_name)


def class_body(model: type[BaseModel], source: str) -> dict[str, Any]:
    """The validation JSON Schema of a Pydantic model class; raise SchemaProblem."""
    try:
        body = model.model_json_schema(mode="validation")
    except Exception as exc:  # pydantic raises PydanticInvalidForJsonSchema and friends
        raise SchemaProblem(f"{source}: Pydantic cannot describe it as JSON Schema: {exc}") from exc
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **body}
