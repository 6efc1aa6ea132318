import sys

from annotate.cli import main

sys.exit(main())
