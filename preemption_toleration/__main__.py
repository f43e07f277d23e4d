import sys

from preemption_toleration.cli.main import main

sys.exit(main())
