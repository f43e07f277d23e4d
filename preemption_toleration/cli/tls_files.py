"""The files of --cert-file, --key-file and --ca-file, checked when the command line is read: a file that is
not there, not PEM, or a key that is not the certificate's is refused with what to give instead, before the
server starts (it would otherwise fail with OpenSSL's `[SSL] PEM lib`)."""

from __future__ import annotations

import argparse
import ssl
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization


def _read(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as error:
        raise argparse.ArgumentTypeError(f"cannot read {path}: {error.strerror or error}") from None


def certificate_file(path: str) -> str:
    """A file of PEM certificates (a serving certificate with its chain, or a CA)."""
    path = path.strip()
    try:
        x509.load_pem_x509_certificates(_read(path))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{path} is not a PEM certificate (text from -----BEGIN CERTIFICATE----- to -----END CERTIFICATE-----); "
            "give the certificate file in PEM, such as a kubernetes.io/tls Secret's tls.crt or ca.crt"
        ) from None
    return path


def private_key_file(path: str) -> str:
    """A file holding an unencrypted PEM private key."""
    path = path.strip()
    try:
        serialization.load_pem_private_key(_read(path), password=None)
    except TypeError:  # encrypted: the server cannot ask for a password
        raise argparse.ArgumentTypeError(
            f"{path} is an encrypted private key; give it unencrypted (`openssl pkey -in {path} -out KEY`)"
        ) from None
    except (ValueError, UnsupportedAlgorithm):
        raise argparse.ArgumentTypeError(
            f"{path} is not a PEM private key (text from -----BEGIN PRIVATE KEY----- or -----BEGIN RSA|EC PRIVATE "
            "KEY----- to its END line); give the key file in PEM, such as a kubernetes.io/tls Secret's tls.key"
        ) from None
    return path


def key_pair_problem(cert_file: str, key_file: str) -> str | None:
    """Why the server cannot serve this certificate with this key (each already read as PEM), if it cannot."""
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(cert_file, key_file)
    except ssl.SSLError as error:
        reason = error.reason or str(error)
        if reason == "KEY_VALUES_MISMATCH":
            return f"--key-file {key_file} is not the key of --cert-file {cert_file}: give the key of that certificate"
        return f"--cert-file {cert_file} and --key-file {key_file} cannot be served: {reason}"
    except OSError as error:  # changed since it was read
        return f"cannot read --cert-file {cert_file} or --key-file {key_file}: {error.strerror or error}"
    return None
