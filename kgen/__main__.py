import sys

from kgen.cli.main import main

sys.exit(main())
