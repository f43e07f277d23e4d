"""What the command line refuses before any work, as a user sees it: exit code 2, the usage of the very
subcommand that was called, and one line saying what is wrong and what to give instead."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization

from preemption_toleration import pki
from preemption_toleration.cli import demo_cmd, dev_cmd, run_cmd, webhook_cmd
from preemption_toleration.cli.failures import EXIT_NO_CLUSTER_CONFIG
from preemption_toleration.cli.main import main
from preemption_toleration.devcluster.toolchain import supported_versions


def usage_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """What `ptol argv` writes to stderr as it exits with argparse's usage error, code 2."""
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    return capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "usage", "line"),
    [
        pytest.param(
            ["dev", "cluster", "up", "extra"],
            "usage: ptol dev cluster up [-h]",
            "ptol dev cluster up: error: unrecognized arguments: extra",
            id="an unknown argument of a subcommand shows that subcommand's usage",
        ),
        pytest.param(
            ["explain", "pc", "low", "--bogus"],
            "usage: ptol explain [-h]",
            "ptol explain: error: unrecognized arguments: --bogus",
            id="an unknown option of a subcommand shows that subcommand's usage",
        ),
        pytest.param(
            ["dev", "manifests", "--bogus", "x"],
            "usage: ptol dev manifests [-h]",
            "ptol dev manifests: error: unrecognized arguments: --bogus x",
            id="an unknown option two levels down",
        ),
    ],
)
def test_a_usage_error_shows_the_usage_of_the_subcommand_called(
    capsys: pytest.CaptureFixture[str], argv: list[str], usage: str, line: str
) -> None:
    err = usage_error(capsys, argv)
    assert err.startswith(usage)
    assert err.splitlines()[-1] == line


SUPPORTED = ", ".join(supported_versions())


NOT_A_COUNT = "is not a count: a whole number, 0 or more"
NOT_A_QUANTITY = "is not a Kubernetes quantity such as 4, 500m or 8Gi"
UP = ["dev", "cluster", "up"]


@pytest.mark.parametrize(
    ("argv", "reason"),
    [
        pytest.param([*UP, "--nodes", "-1"], NOT_A_COUNT, id="a negative count of nodes"),
        pytest.param([*UP, "--nodes", "x"], NOT_A_COUNT, id="a count that is not a number"),
        pytest.param([*UP, "--node-cpu", "abc"], NOT_A_QUANTITY, id="a CPU capacity that is not a quantity"),
        pytest.param(
            [*UP, "--node-memory", "8GB"], NOT_A_QUANTITY, id="a memory capacity with a suffix Kubernetes does not know"
        ),
        pytest.param(
            [*UP, "--node-cpu", "0"],
            "is not more than 0: give a quantity such as 4, 500m or 8Gi",
            id="a capacity of nothing",
        ),
        pytest.param(
            [*UP, "--namespace", "Team_A"],
            "is not a namespace name (up to 63 lower-case letters, digits and '-', starting and ending with a letter "
            "or digit)",
            id="a namespace the API server would refuse",
        ),
        pytest.param(
            [*UP, "--kubernetes-version", "1.2.3"],
            f"is not a Kubernetes release this repository pins; supported: {SUPPORTED} (`ptol dev cluster pin 1.2.3` "
            "adds one)",
            id="a release that is not pinned, with the pinned ones",
        ),
        pytest.param(
            ["dev", "cluster", "install", "--kubernetes-version", "1.37.2", "--kubernetes-version", "1.37"],
            f"is not a Kubernetes release such as 1.37.2; supported: {SUPPORTED}",
            id="a release that is not X.Y.Z, with the pinned ones",
        ),
    ],
)
def test_values_refused_before_any_work(capsys: pytest.CaptureFixture[str], argv: list[str], reason: str) -> None:
    """The last option given is the one refused, by its name and value."""
    subcommand = " ".join(argv[:3])
    err = usage_error(capsys, argv)
    assert err.startswith(f"usage: ptol {subcommand} [-h]")
    assert err.splitlines()[-1] == f"ptol {subcommand}: error: argument {argv[-2]}: '{argv[-1]}' {reason}"


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["dev", "cluster", "up", "--dir", "unused"], id="dev cluster up"),
        pytest.param(["dev", "cluster", "install"], id="dev cluster install"),
        pytest.param(["demo", "--dir", "unused"], id="demo"),
    ],
)
def test_a_release_variable_that_is_not_pinned_is_refused_before_any_work(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    def no_work(*args: object, **kwargs: object) -> None:
        raise AssertionError("work started")

    monkeypatch.setenv("PTOL_KUBERNETES_VERSION", "9.9.9")
    monkeypatch.setattr(dev_cmd, "ensure_toolchain", no_work)
    monkeypatch.setattr(dev_cmd, "LocalCluster", no_work)
    monkeypatch.setattr(demo_cmd, "run_until_signalled", no_work)
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        f"ptol {' '.join(argv[:-2] if '--dir' in argv else argv)}: error: $PTOL_KUBERNETES_VERSION: '9.9.9' is not a "
        f"Kubernetes release this repository pins; supported: {SUPPORTED} (`ptol dev cluster pin 9.9.9` adds one)\n"
    )


@pytest.fixture(scope="module")
def tls_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A serving pair and its CA, a key of another pair, an encrypted key, a text file and an empty one."""
    directory = tmp_path_factory.mktemp("tls")
    ca = pki.generate_ca("test-ca")
    pair = pki.issue_serving_cert(ca, "localhost", dns_names=["localhost"])
    other = pki.issue_serving_cert(ca, "localhost", dns_names=["localhost"])
    encrypted = serialization.load_pem_private_key(pair.key_pem, password=None).private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"secret"),
    )
    files = {
        "tls.crt": pair.cert_pem,
        "tls.key": pair.key_pem,
        "ca.crt": ca.cert_pem,
        "other.key": other.key_pem,
        "encrypted.key": encrypted,
        "notes.txt": b"not a certificate\n",
        "empty": b"",
    }
    for name, content in files.items():
        (directory / name).write_bytes(content)
    return directory


NOT_A_CERTIFICATE = (
    "is not a PEM certificate (text from -----BEGIN CERTIFICATE----- to -----END CERTIFICATE-----); give the "
    "certificate file in PEM, such as a kubernetes.io/tls Secret's tls.crt or ca.crt"
)
NOT_A_KEY = (
    "is not a PEM private key (text from -----BEGIN PRIVATE KEY----- or -----BEGIN RSA|EC PRIVATE KEY----- to its "
    "END line); give the key file in PEM, such as a kubernetes.io/tls Secret's tls.key"
)
SERVABLE = {"--cert-file": "{dir}/tls.crt", "--key-file": "{dir}/tls.key", "--ca-file": "{dir}/ca.crt"}


def refused_file(flag: str, file: str, reason: str, rule: str) -> Any:
    """A case that gives `flag` this file of the TLS directory, refused with the flag, the path and `reason`."""
    return pytest.param({}, {flag: f"{{dir}}/{file}"}, f"argument {flag}: {{dir}}/{file} {reason}", id=rule)


@pytest.mark.parametrize("command", ["webhook", "run"])
@pytest.mark.parametrize(
    ("env", "flags", "line"),
    [
        refused_file("--cert-file", "notes.txt", NOT_A_CERTIFICATE, "a certificate that is not PEM"),
        refused_file("--cert-file", "tls.key", NOT_A_CERTIFICATE, "the key given as the certificate"),
        refused_file("--key-file", "empty", NOT_A_KEY, "an empty key file"),
        refused_file("--key-file", "tls.crt", NOT_A_KEY, "the certificate given as the key"),
        pytest.param(
            {},
            {"--key-file": "{dir}/encrypted.key"},
            "argument --key-file: {dir}/encrypted.key is an encrypted private key; give it unencrypted "
            "(`openssl pkey -in {dir}/encrypted.key -out KEY`)",
            id="an encrypted key, whose password the server cannot ask for",
        ),
        refused_file("--ca-file", "notes.txt", NOT_A_CERTIFICATE, "a CA that is not PEM"),
        pytest.param(
            {},
            {"--cert-file": "{dir}/missing.crt"},
            "argument --cert-file: cannot read {dir}/missing.crt: No such file or directory",
            id="a certificate file that is not there",
        ),
        pytest.param(
            {"PTOL_TLS_CERT_FILE": "{dir}/notes.txt"},
            {"--cert-file": None},
            "argument --cert-file: {dir}/notes.txt " + NOT_A_CERTIFICATE + " (from $PTOL_TLS_CERT_FILE)",
            id="a certificate that is not PEM, from the variable",
        ),
    ],
)
def test_tls_files_that_cannot_be_served_are_refused_before_the_server_starts(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tls_dir: Path,
    command: str,
    env: dict[str, str],
    flags: dict[str, str | None],
    line: str,
) -> None:
    """Each case replaces one file of a servable pair (or drops its flag: None)."""
    for name, value in env.items():
        monkeypatch.setenv(name, value.format(dir=tls_dir))
    options = {flag: path for flag, path in {**SERVABLE, **flags}.items() if path is not None}
    argv = [command, *(word.format(dir=tls_dir) for option in options.items() for word in option)]
    err = usage_error(capsys, argv)
    assert err.startswith(f"usage: ptol {command} [-h]")
    assert err.splitlines()[-1] == f"ptol {command}: error: " + line.format(dir=tls_dir)


@pytest.mark.parametrize("command", ["webhook", "run"])
def test_a_key_that_is_not_the_certificates_is_refused_before_the_server_starts(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tls_dir: Path, command: str
) -> None:
    def no_work(*args: object, **kwargs: object) -> None:
        raise AssertionError("work started")

    monkeypatch.setattr(webhook_cmd, "require_cluster_configuration", no_work)
    monkeypatch.setattr(run_cmd, "require_cluster_configuration", no_work)
    files = {**SERVABLE, "--key-file": "{dir}/other.key"}
    assert main([command, *(word.format(dir=tls_dir) for option in files.items() for word in option)]) == 2
    assert capsys.readouterr().err == (
        f"ptol {command}: error: --key-file {tls_dir}/other.key is not the key of --cert-file {tls_dir}/tls.crt: "
        "give the key of that certificate\n"
    )


CLUSTER_COMMANDS = [
    pytest.param(["explain", "pod", "default/p"], id="explain pod"),
    pytest.param(["explain", "pc", "low"], id="explain priorityclass"),
    pytest.param(["operator"], id="operator"),
    pytest.param(["webhook", "--port", "0"], id="webhook"),
    pytest.param(["run"], id="run"),
]


@pytest.mark.parametrize("argv", CLUSTER_COMMANDS)
@pytest.mark.parametrize(
    ("content", "from_variable"),
    [
        pytest.param("", False, id="an empty file given by --kubeconfig"),
        pytest.param("# written by hand\n\n---\n", False, id="a file of only comments and empty documents"),
        pytest.param("", True, id="an empty file given by KUBECONFIG"),
    ],
)
def test_an_empty_kubeconfig_is_refused_with_what_to_give(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    argv: list[str],
    content: str,
    from_variable: bool,
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(content)
    if from_variable:
        monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    assert main(argv if from_variable else [*argv, "--kubeconfig", str(kubeconfig)]) == EXIT_NO_CLUSTER_CONFIG
    source = "$KUBECONFIG" if from_variable else "--kubeconfig"
    assert capsys.readouterr().err == (
        f"ptol {argv[0]}: error: kubeconfig {kubeconfig} (from {source}) is empty: point --kubeconfig or KUBECONFIG "
        "at a kubeconfig file (such as one that `kubectl config view --flatten` writes)\n"
    )


@pytest.mark.parametrize(
    ("command", "guard", "steering"),
    [("webhook", "audit", "on"), ("webhook", "off", "audit"), ("run", "audit", "on")],
    ids=["steering on with the guard in audit", "steering audit with the guard off", "ptol run alike"],
)
def test_steering_needs_the_guard_enforcing(capsys: pytest.CaptureFixture[str], command, guard, steering) -> None:
    assert main([command, "--guard", guard, "--steering", steering]) == 2
    assert (
        f"ptol {command}: error: --steering {steering} acts on the guard's refusals: it needs --guard enforce, "
        f"not --guard {guard}"
    ) in capsys.readouterr().err
