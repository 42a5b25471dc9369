import sys

from coterie.cli import main

sys.exit(main())
