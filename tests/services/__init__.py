"""Real services started by the tests on free loopback ports."""
