"""The long fuzz run: N mutated requests (100,000 by default) across every endpoint of the webhook server,
in-process, with the mutations of `webhook_fuzzing`. Prints the answers by endpoint and status; exits 1 if
any answer is a 5xx or reached the last-resort net. Run from the repository's root:

    .venv/bin/python -m tests.unit.fuzz_webhooks [--requests N] [--seed S]
"""

from __future__ import annotations

import argparse
import collections
import logging
import random
from typing import Any

from tests.unit.webhook_fuzzing import DELETE, INTERESTING, answer, encode, mutate, seeds, server, unexpected_errors


def random_value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if roll < 0.6 or depth > 2:
        return rng.choice(INTERESTING)
    if roll < 0.8:
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(3))]
    return {
        rng.choice(["a", "type", "spec", "metadata", "priority"]): random_value(rng, depth + 1)
        for _ in range(rng.randrange(3))
    }


def random_edit(rng: random.Random) -> tuple[float, Any]:
    roll = rng.random()
    if roll < 0.1:
        return rng.random(), DELETE
    if roll < 0.2:
        return rng.random(), (rng.choice(["x", "spec", "status", "annotations", "nodeName"]), random_value(rng))
    return rng.random(), random_value(rng)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)  # bad requests are logged one by one; the counts say enough here
    rng, app, requests = random.Random(args.seed), server(), seeds()
    answers: collections.Counter[tuple[str, int]] = collections.Counter()
    for _ in range(args.requests):
        path, payload = rng.choice(requests)
        edits = [random_edit(rng) for _ in range(rng.choice((1, 1, 2, 3)))]
        answers[(path, answer(app, path, encode(mutate(payload, edits))))] += 1
    for (path, status), count in sorted(answers.items()):
        print(f"{path:<42} {status}  {count:>7}")
    errors = sum(count for (_, status), count in answers.items() if status >= 500)
    net = unexpected_errors(app)
    print(f"{args.requests} requests: {errors} answers of 5xx, {net:.0f} caught by the last-resort net")
    return 1 if errors or net else 0


if __name__ == "__main__":
    raise SystemExit(main())
