"""Loaders that turn files into fragment content: fragment files (markdown with YAML front matter),
git repositories (markdown and code chunks), bundles; plus the secret guard. No SQL here."""
