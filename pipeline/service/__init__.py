"""Running it all: the scheduler, its jobs and their state, the vault watcher."""
