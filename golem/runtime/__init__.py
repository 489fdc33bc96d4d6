"""The daemon's skeleton: clock, tick loops, state store, lifecycle."""
