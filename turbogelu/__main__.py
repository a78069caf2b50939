"""``python -m turbogelu``: the product's command line (turbogelu/cli.py)."""

import sys

from turbogelu.cli import main

if __name__ == "__main__":
    sys.exit(main())
