"""Loaders that turn files into fragment content: fragment files (markdown with YAML
front matter) now; git repositories and code chunking later. No SQL here."""
