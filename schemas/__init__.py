"""The published JSON Schemas of workbench (fragment front matter, workbench.yaml, bundles).

This folder is the one copy. pyproject.toml maps it into the package as
``workbench.schema_files`` (setuptools ``package-dir``), so a wheel ships the
``*.schema.json`` files and ``workbench/schemas.py`` loads them with importlib.resources.
This file only makes the folder a regular package, which an editable install needs in
order to import a mapped subpackage; it must hold no code.
"""
