import sys

from coterie.ops.cli import main

sys.exit(main())
