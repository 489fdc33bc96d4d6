"""The Grimoire: the golem's local memory (episodic, semantic, procedural, working)."""
