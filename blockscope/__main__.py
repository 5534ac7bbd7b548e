"""`python -m blockscope ...`: the same as the `blockscope` console command."""

import sys

from blockscope.cli import main

sys.exit(main())
