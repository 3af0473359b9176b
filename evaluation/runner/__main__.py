import sys

from evaluation.runner.cli import main

sys.exit(main())
