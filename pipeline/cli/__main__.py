"""`python -m pipeline.cli` runs the same CLI as the `signaldesk` script."""

from pipeline.cli import main

main()
