"""The `modelwatch` command line: the composition root for one-shot commands."""
