"""Operator tools for a data dir's integrity: `golem check`, `golem backup`, `golem restore`
and `golem memory rebuild-episodes`. None of them opens the golem."""
