"""Certificates and keys as PEM text, as Pulp takes them (`ca_cert`, `client_cert`, `client_key`).

Checked as text and nothing else: a value is never opened as a path, so what the API answers cannot
tell whether a file exists on the server. A certificate field holds certificates only (a key pasted
with them would be shown to every reader of the remote; it goes in the write-only `client_key`).
"""

from __future__ import annotations

import binascii
import re

from rest_framework import serializers

__all__ = ["certificates", "private_key"]

_BLOCK = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END \1-----", re.DOTALL)
_CERTIFICATE = "CERTIFICATE"
_KEYS = frozenset({"PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY", "DSA PRIVATE KEY"})
_NOT_CERTIFICATES = "not PEM text: give the certificates themselves (-----BEGIN CERTIFICATE----- ...), not a path"
_NOT_A_KEY = "not PEM text: give the key itself (-----BEGIN PRIVATE KEY----- ...), not a path"


def certificates(text: str | None) -> str | None:
    """`text` if it is one or more PEM certificates (and nothing but certificates), None if empty; else a 400."""
    if not text:
        return None
    labels = _labels(text, _NOT_CERTIFICATES)
    others = sorted(set(labels) - {_CERTIFICATE})
    if others:
        raise serializers.ValidationError(
            f"holds a {others[0]} block: only certificates go here; a key goes in client_key, which is never shown"
        )
    return text


def private_key(text: str | None) -> str | None:
    """`text` if it holds a PEM private key (unencrypted: no one could give its passphrase), None if
    empty; else a 400."""
    if not text:
        return None
    if not _KEYS & set(_labels(text, _NOT_A_KEY)):
        raise serializers.ValidationError(_NOT_A_KEY)
    return text


def _labels(text: str, refusal: str) -> list[str]:
    """The labels of the PEM blocks in `text`, each checked to hold strict base64 of a DER structure;
    `refusal` (a 400) if there is none or one is not."""
    blocks = _BLOCK.findall(text)
    if not blocks or not all(_is_der(body) for _, body in blocks):
        raise serializers.ValidationError(refusal)
    return [label for label, _ in blocks]


def _is_der(body: str) -> bool:
    """Whether a block's body is base64 (line breaks aside) of a DER SEQUENCE, as certificates and keys are."""
    try:
        der = binascii.a2b_base64("".join(body.split()), strict_mode=True)
    except (binascii.Error, ValueError):
        return False
    return der[:1] == b"\x30"
