"""Drop-in entry points of other graph backends, so their users switch by changing an import.

- ``graphdispatch.compat.mindiesd``: MindIE-SD's ``MindieSDBackend``, ``CompilationConfig`` and
  ``create_aclgraph_backend()`` (design 6.1).

Importing this package or its modules loads no compile stack (design 2.9).
"""
