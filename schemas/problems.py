"""The one error a schema that cannot be used raises, below every module that loads or converts one.

The registry (files, names, dicts) and the Pydantic converter both raise it, and the CLI and the flows
catch it to refuse a run with the message; defined apart from both so neither imports the other.
"""


class SchemaProblem(ValueError):
    """A schema that cannot be used: unknown name, unreadable file, invalid JSON Schema, lint errors."""
