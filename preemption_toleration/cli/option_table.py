"""The option tables of docs/configuration.md, made from the options' declarations.

`python -m preemption_toleration.cli.option_table docs/configuration.md` writes them into the page (under
their headings); tests/unit/test_cli_options.py fails when the page's tables are not the ones made here."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from preemption_toleration.cli.operator_cmd import operator_command_options
from preemption_toleration.cli.options import LOGGING_OPTIONS, Option
from preemption_toleration.cli.run_cmd import DEV_CLUSTER, WEBHOOK_REPLICAS
from preemption_toleration.cli.webhook_options import REGISTRATION_OPTIONS, server_options

HEADER = "| flag | environment | default | meaning |\n|---|---|---|---|\n"


def table_row(option: Option) -> str:
    placeholder = option.shown or option.metavar
    flag = f"`{option.flag} {placeholder}`" if placeholder else f"`{option.flag}`"
    environment = f"`{option.env}`" + (" (comma-separated)" if option.repeatable else "")
    default = option.table_default or (f"`{option.default}`" if option.default else "off")
    return f"| {flag} | {environment} | {default} | {option.meaning or option.help} |\n"


def option_table(options: Iterable[Option]) -> str:
    """A markdown table of `options`, one row each, in their order."""
    return HEADER + "".join(table_row(option) for option in options)


def configuration_tables() -> dict[str, str]:
    """Each heading of docs/configuration.md that has an option table, with its table."""
    return {
        "## ptol operator": option_table(operator_command_options()),
        "## ptol webhook": option_table((*server_options(), *REGISTRATION_OPTIONS, *LOGGING_OPTIONS)),
        "## ptol run": option_table((WEBHOOK_REPLICAS, DEV_CLUSTER)),
    }


def with_tables(page: str, tables: Mapping[str, str]) -> str:
    """`page` with the first table after each heading replaced by the heading's table."""
    for heading, table in tables.items():
        start = page.index(HEADER, page.index(f"\n{heading}\n"))
        end = page.find("\n\n", start)
        page = page[:start] + table + (page[end + 1 :] if end >= 0 else "")
    return page


def main(paths: list[str]) -> int:
    for path in map(Path, paths):
        path.write_text(with_tables(path.read_text(), configuration_tables()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
