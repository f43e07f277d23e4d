"""Pure parts of the toolchain: the deb-src entry and the scheduler patch."""

from __future__ import annotations

import pytest

from preemption_toleration.devcluster.toolchain import (
    ToolchainError,
    deb_src_lines,
    deb_src_stanzas,
    patch_scheduler_factory,
)

SOURCES = """\
Types: deb
# a comment
URIs: http://mirror.invalid/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://mirror.invalid/other
Suites: bookworm
Components: main
"""


def test_deb_src_stanzas_copy_deb_entries_only() -> None:
    assert deb_src_stanzas(SOURCES) == (
        "Types: deb-src\n"
        "URIs: http://mirror.invalid/debian\n"
        "Suites: bookworm bookworm-updates\n"
        "Components: main\n"
        "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
    )


def test_deb_src_lines_from_one_line_format() -> None:
    text = "# c\ndeb [arch=amd64] http://mirror.invalid/debian bookworm main\ndeb-src x y z\n"
    assert deb_src_lines(text) == ["deb-src [arch=amd64] http://mirror.invalid/debian bookworm main"]


FACTORY = """\
	profiles, err := profile.NewMap(c.profiles, c.registry, c.recorderFactory,
		frameworkruntime.WithPodNominator(nominator),
		frameworkruntime.WithCaptureProfile(frameworkruntime.CaptureProfile(c.frameworkCapturer)),
	)
"""


def test_scheduler_patch_adds_extenders_once() -> None:
    patched = patch_scheduler_factory(FACTORY)
    assert "\t\tframeworkruntime.WithExtenders(extenders),\n\t)" in patched
    assert patch_scheduler_factory(patched) == patched


def test_scheduler_patch_refuses_unknown_code() -> None:
    with pytest.raises(ToolchainError):
        patch_scheduler_factory("package scheduler\n")
