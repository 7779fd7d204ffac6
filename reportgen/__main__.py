"""Allow `python -m reportgen`."""

import sys

from reportgen.entry import main

sys.exit(main())
