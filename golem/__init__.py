"""Golem runtime: a long-running daemon for a mortal autonomous DeFi agent."""

__version__ = "0.1.0"
