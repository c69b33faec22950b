"""Tests of the schema migrations (the `migrations` package): the chain, each data move."""
