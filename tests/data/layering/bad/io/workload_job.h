// A stand-in for the real header: the layering test's own check.
