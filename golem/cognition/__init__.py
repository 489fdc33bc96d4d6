"""Theta's cognition: model providers, prompts, tools, decisions and the spend ledger."""
