"""The Textual face: browse, search, read and edit with versions, pins, anti-patterns, the
nudge inbox and export. It calls the Python API (``Workbench``) only; it never runs SQL.
``textual`` is imported only under this package."""
