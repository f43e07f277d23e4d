"""Command-line options with environment-variable equivalents, checked with messages a person can act on.

A flag on the command line wins over its environment variable, which wins over the default. Values from
the environment are checked exactly like flags (argparse does not check `choices` of a default), and an
error says which variable it came from:
`argument --port: 'abc' is not a port number (0 to 65535) (from $PTOL_WEBHOOK_PORT)`.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from preemption_toleration.cli.values import LOG_FORMATS, choice, is_on, log_level, non_empty

ENV_ATTRIBUTE = "env_var"  # set on each action added here; the docs drift test reads it


class _FromEnvironment(str):
    """A default that came from an environment variable, so that an error can name the variable."""

    env_var: str


@dataclass(frozen=True)
class Option:
    """One option, declared once: its flag, environment variable, value type, default and help; the settings
    field it fills; and its row in the tables of docs/configuration.md (cli/option_table.py).

    `repeatable`: a flag given any number of times, whose variable holds a comma-separated list.
    `setting`: the field of the component's settings it fills, if not the one argparse names after the flag;
    `to_setting` converts the parsed value. A value of None or an empty list leaves the field's default.
    `shown`, `table_default` and `meaning`: the table row's placeholder after the flag, its default (else
    the default in backquotes, or "off") and its meaning (else the help)."""

    flag: str
    env: str
    help: str
    type: Callable[[str], Any] = str
    default: str | None = None
    metavar: str | None = None
    dest: str | None = None
    repeatable: bool = False
    setting: str | None = None
    to_setting: Callable[[Any], Any] | None = None
    shown: str | None = None
    table_default: str | None = None
    meaning: str | None = None

    @property
    def attribute(self) -> str:
        """Where argparse puts the value on the parsed arguments."""
        return self.dest or self.flag.lstrip("-").replace("-", "_")

    @property
    def settings_field(self) -> str:
        return self.setting or self.attribute

    def add_to(self, parser: argparse.ArgumentParser) -> argparse.Action:
        if self.repeatable:
            return env_list_option(
                parser, self.flag, env=self.env, dest=self.attribute, help=self.help, metavar=self.metavar or ""
            )
        return env_option(
            parser, self.flag, env=self.env, default=self.default, type=self.type, help=self.help, metavar=self.metavar
        )


def flag_value(default: object) -> str | None:
    """A settings field's default as a flag spells it, for an option's `default`: on/off for a bool, a whole number
    of seconds without its ".0"; None (no default) stays None."""
    if default is None:
        return None
    if isinstance(default, bool):
        return "on" if default else "off"
    if isinstance(default, float) and default.is_integer():
        return str(int(default))
    return str(default)


def switch(flag: str, env: str, default: bool, help: str, meaning: str | None = None) -> Option:
    """An on/off option, whose setting is a bool."""
    return Option(
        flag,
        env=env,
        default=flag_value(default),
        type=choice("on", "off"),
        help=help,
        shown="on\\|off",
        to_setting=is_on,
        meaning=meaning,
    )


def add_options(parser: argparse.ArgumentParser, options: Iterable[Option]) -> None:
    for option in options:
        option.add_to(parser)


def add_command(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    options: Iterable[Option],
    handler: Callable[[argparse.Namespace], int],
    *,
    help: str,
    description: str,
) -> argparse.ArgumentParser:
    """The parser of command `name`, with `options`, run by `handler`."""
    parser = subparsers.add_parser(name, help=help, description=description)
    add_options(parser, options)
    parser.set_defaults(handler=handler)
    return parser


def settings_values(args: argparse.Namespace, options: Iterable[Option]) -> dict[str, Any]:
    """The settings fields the parsed `args` fill, by the options' `settings_field`; an option not given (None,
    or an empty list) and not in `args` at all (another command's) leaves its field's default."""
    values: dict[str, Any] = {}
    for option in options:
        value = getattr(args, option.attribute, None)
        if value is None or value == []:
            continue
        values[option.settings_field] = option.to_setting(value) if option.to_setting else value
    return values


def env_option(
    parser: argparse.ArgumentParser,
    flag: str,
    *,
    env: str,
    default: str | None = None,
    type: Callable[[str], Any] = str,
    help: str,
    metavar: str | None = None,
) -> argparse.Action:
    """Add `flag`, whose default is `$env`, else `default` (a string, converted by `type` like a flag)."""
    raw = os.environ.get(env)
    value: str | None = default
    if raw is not None and raw != "":
        value = _FromEnvironment(raw)
        value.env_var = env
    shown_default = f" (default {default})" if default not in (None, "") else ""
    choices = getattr(type, "choices", None)
    if metavar is None and choices:
        metavar = "{" + ",".join(choices) + "}"
    action = parser.add_argument(
        flag, default=value, type=_naming_source(type), metavar=metavar, help=f"{help} [{env}]{shown_default}"
    )
    setattr(action, ENV_ATTRIBUTE, env)
    return action


def env_list_option(
    parser: argparse.ArgumentParser,
    flag: str,
    *,
    env: str,
    dest: str,
    help: str,
    metavar: str,
) -> argparse.Action:
    """A repeatable flag of non-empty strings; `$env` holds a comma-separated list, which flags replace."""
    items = [item.strip() for item in os.environ.get(env, "").split(",") if item.strip()]
    action = parser.add_argument(
        flag,
        action=_AppendReplacingEnvironment,
        dest=dest,
        default=items or None,
        type=_naming_source(non_empty),
        metavar=metavar,
        help=f"{help}; repeatable [{env}, comma-separated]",
    )
    setattr(action, ENV_ATTRIBUTE, env)
    return action


class _AppendReplacingEnvironment(argparse.Action):
    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        current = getattr(namespace, self.dest, None)
        if current is None or current is self.default:  # the first flag replaces the variable's list
            current = []
        setattr(namespace, self.dest, [*current, values])


def _naming_source(convert: Callable[[str], Any]) -> Callable[[str], Any]:
    def checked(value: str) -> Any:
        try:
            return convert(value)
        except (argparse.ArgumentTypeError, ValueError) as error:
            reason = str(error) if isinstance(error, argparse.ArgumentTypeError) else f"invalid value {value!r}"
            if isinstance(value, _FromEnvironment):
                reason = f"{reason} (from ${value.env_var})"
            raise argparse.ArgumentTypeError(reason) from None

    checked.__name__ = getattr(convert, "__name__", "value")
    return checked


LOGGING_OPTIONS = (
    Option(
        "--log-format",
        env="PTOL_LOG_FORMAT",
        default="text",
        type=choice(*LOG_FORMATS, ignore_case=True),
        help="log lines as key=value text or as JSON objects",
        meaning="`text` (`key=value`) or `json` (one object per line)",
    ),
    Option(
        "--log-level",
        env="PTOL_LOG_LEVEL",
        default="INFO",
        type=log_level,
        help="the lowest level logged",
        meaning="`DEBUG`, `INFO`, `WARNING` (or `WARN`), `ERROR` or `CRITICAL`, in any case",
    ),
)

KUBECONFIG = Option(
    "--kubeconfig",
    env="KUBECONFIG",
    help="kubeconfig file; default: ~/.kube/config, else the in-cluster service account",
    table_default="`~/.kube/config`, else in-cluster",
    meaning="the cluster to talk to",
)


def env_vars_of(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Each option string of `parser` that has an environment variable, with the variable (for docs and tests)."""
    found: dict[str, str] = {}
    for action in parser._actions:  # argparse has no public accessor for its actions
        env = getattr(action, ENV_ATTRIBUTE, None)
        if env:
            found[action.option_strings[-1]] = env
    return found


def options_of(parser: argparse.ArgumentParser) -> Sequence[str]:
    """The long option strings of `parser`, except --help."""
    return [
        action.option_strings[-1]
        for action in parser._actions
        if action.option_strings and action.option_strings[-1] != "--help"
    ]
