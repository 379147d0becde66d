"""Intake: the staged scan of every source into the item ledger (feeds, full text, dedupe)."""
