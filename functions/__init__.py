"""Lambda entry points: one thin module per function (``api`` now; streams and workflows later)."""
