"""Curation rules as values: pins, new anti-pattern ids, staleness ranking and code drift. No SQL here."""
