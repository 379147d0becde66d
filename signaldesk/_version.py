"""The signaldesk version, in the one place the build reads it from (``pyproject.toml``
takes it as a dynamic attribute).

Importing this costs nothing, unlike ``importlib.metadata``: the one-shot search client
compares it with a running `serve`'s before it hands a search over.
"""

__version__ = "0.1.0"
