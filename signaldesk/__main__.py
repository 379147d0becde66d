"""``python -m signaldesk``: the command line, for when the ``signaldesk`` script is not
on ``PATH`` (MCP client configs use it with an absolute interpreter path).

The one module of the shared base that imports a layer: it is the program's entry
point and sits above everything (``tests/test_layers.py`` knows this).
"""

from signaldesk.pipeline.cli import main

main()
