"""Drop-in entry points of other graph backends, so their users switch by changing an import.

- ``graphdispatch.compat.mindiesd``: MindIE-SD's ``MindieSDBackend``, ``CompilationConfig`` and
  ``create_aclgraph_backend()`` (docs/design.md, "The anchor").

Importing this package or its modules loads no compile stack (Note [Lazy loading] in
_registration.py).
"""
