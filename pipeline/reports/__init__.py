"""The notes signaldesk writes each day: the triage report and the captain's log."""
