"""The item ledger: one SQLite file of every item, its state, scores and corrections."""
