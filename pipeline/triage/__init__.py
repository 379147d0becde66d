"""Triage: scoring pending items, filing signal notes, learning from corrections."""
