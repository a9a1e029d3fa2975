"""Curation: pins now; anti-patterns, staleness, nudges, merges later. No SQL here."""
