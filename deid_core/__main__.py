import sys

from deid_core.cli import main

sys.exit(main())
