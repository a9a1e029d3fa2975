"""Exports as files: fragment files, bundles, agent context files (AGENTS.md, CLAUDE.md, Cursor rules,
llms.txt), written all-or-nothing under a manifest. No SQL here."""
