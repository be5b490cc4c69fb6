"""What the serializers of both dialects share: RemoteSerializer, which Pulp's FileRemoteSerializer
extends, UniqueName, and the headers as a reader may see them (`shown_headers`). A remote is checked by
the model's own clean() and, in both dialects, by RemoteSerializer: the remote-address policy, PEM text,
no secret kept where a change would expose it (Remote.safe_change), header values shown only to whom
they may be shown. Each dialect's other serializers are its own (deprecated/serializers.py,
pulp/serializers.py)."""

from __future__ import annotations

import copy
import re
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, models, transaction
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.validators import UniqueValidator

from downloaders import AddressRefused, UnknownDownloader, UnsupportedURL, check_url
from pulp_base.download_processes import AUTO, parse_processes
from pulp_sync.api import pem
from pulp_sync.api.access import may_change
from pulp_sync.api.fields import HrefField
from pulp_sync.models import Remote

__all__ = ["UniqueName", "shown_headers", "HIDDEN_GIVEN_BACK", "RemoteSerializer"]

SECRET_FIELDS = ("password", "proxy_password", "client_key")
"""Remote fields that are written but never shown; `hidden_fields` says which of them are set."""
NOT_SHOWN = ("secret_headers",)
"""Remote fields the API neither shows nor takes: which headers came by reference is the command line's."""
HIDDEN_GIVEN_BACK = "a value shown as null is hidden: give it again, or leave headers out to keep them all"
"""Why a header value of null is refused: a client sending back what it read must not blank a hidden value."""


class HiddenFieldSerializer(serializers.Serializer):
    """Whether a write-only field has a value (Pulp's `hidden_fields`)."""

    name = serializers.CharField()
    is_set = serializers.BooleanField()


class UniqueName:
    """A serializer mixin (before ModelSerializer) for objects whose names are unique across the
    installation, as in Pulp (remotes, repositories). A name another object holds, whoever's and whether
    the user may see it or not, is refused with the name field's own message and nothing more, also when
    that object is saved between the field's check and this save, where the database's index refuses it:
    a taken name is the one thing the API tells of an object the user may not see (docs/api.md)."""

    def create(self, validated_data: dict[str, Any]) -> models.Model:
        with self._name_checked(validated_data.get("name")):
            return super().create(validated_data)  # type: ignore[misc]

    def update(self, instance: models.Model, validated_data: dict[str, Any]) -> models.Model:
        with self._name_checked(validated_data.get("name"), instance.pk):
            return super().update(instance, validated_data)  # type: ignore[misc]

    @contextmanager
    def _name_checked(self, name: str | None, pk: int | None = None) -> Iterator[None]:
        """Save in a transaction (a savepoint in the view's) whose IntegrityError, if another object has
        `name` by then, is the 400 of the name field's unique check; any other is left as it is."""
        try:
            with transaction.atomic():
                yield
        except IntegrityError as error:
            model = self.Meta.model  # type: ignore[attr-defined]
            if name is None or not model.objects.filter(name=name).exclude(pk=pk).exists():
                raise
            raise serializers.ValidationError({"name": [self._taken()]}) from error

    def _taken(self) -> str:
        """The message of the name field's own unique check (`remote with this name already exists.`)."""
        validators = self.fields["name"].validators  # type: ignore[attr-defined]
        return str(next(validator.message for validator in validators if isinstance(validator, UniqueValidator)))


def shown_headers(field: serializers.Field, remote: Remote) -> dict[str, str | None] | None:
    """`remote`'s headers as the request's user may read them (Remote.shown_headers): the values that
    are not secret to the remote's owners and admins only, who may change them anyway."""
    if not remote.headers:  # nothing to hide: no query for the user's roles
        return remote.headers
    request = field.context.get("request")
    return remote.shown_headers(request is not None and may_change(request.user, remote))


class ShownHeadersField(serializers.JSONField):
    """The deprecated API's headers, one JSON object, as `shown_headers` shows them; a null value is refused."""

    def to_internal_value(self, data: Any) -> Any:
        headers = super().to_internal_value(data)
        if isinstance(headers, dict) and None in headers.values():
            raise serializers.ValidationError(HIDDEN_GIVEN_BACK)
        return headers

    def get_attribute(self, remote: Remote) -> dict[str, str | None] | None:
        return shown_headers(self, remote)


@extend_schema_field({"oneOf": [{"type": "integer", "minimum": 1}, {"type": "string", "enum": ["auto"]}]})
class ProcessesField(serializers.Field):
    """`download_processes`: a whole number from 1 up, or "auto" (stored as 0), by the rule the command line's
    --processes and the specs use (pulp_base.download_processes.parse_processes)."""

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int | str):
            raise serializers.ValidationError(f"expected a whole number from 1 up, or auto, not {data!r}")
        try:
            return parse_processes(data)
        except ValueError as error:
            raise serializers.ValidationError(str(error)) from None

    def to_representation(self, value: int) -> int | str:
        return "auto" if value == AUTO else value


class RemoteSerializer(UniqueName, serializers.ModelSerializer):
    """A remote with its downloader settings; validated by `Remote.clean`, exactly as the CLI's are,
    and by what only API users may not do: name a host the remote-address policy refuses, give a
    certificate as anything but PEM text, keep a secret where a change exposes it (Remote.safe_change)."""

    pulp_href = HrefField(view_name="remote-detail")
    headers: serializers.Field = ShownHeadersField(  # the dialect's serializer has its own field
        required=False,
        allow_null=True,
        help_text="Headers sent with every request; an update replaces them all. The value of Authorization, "
        "Proxy-Authorization, Cookie and of a header given by reference is never shown (null), nor any value "
        "to a viewer.",
    )
    hidden_fields = serializers.SerializerMethodField()
    download_processes = ProcessesField(
        required=False,
        help_text="Processes one sync splits its downloads across: a number from 1 (the default), or auto (one per "
        "CPU the sync may use, none for a handful of files). They share the remote's download_concurrency (its "
        "max_concurrency with auto_concurrency) and rate_limit, so a sync never uses more processes than that.",
    )

    class Meta:
        model = Remote
        fields = [
            "pulp_href",
            "id",
            *(f.name for f in Remote._meta.concrete_fields if f.name not in ("id", *NOT_SHOWN)),
            "hidden_fields",
        ]
        extra_kwargs = {name: {"write_only": True} for name in SECRET_FIELDS}

    @extend_schema_field(HiddenFieldSerializer(many=True))
    def get_hidden_fields(self, remote: Remote) -> list[dict[str, Any]]:
        return [{"name": name, "is_set": getattr(remote, name) not in (None, "")} for name in SECRET_FIELDS]

    def validate_url(self, url: str) -> str:
        return _allowed(url)

    def validate_proxy_url(self, url: str | None) -> str | None:
        return url and _allowed(url)

    def validate_ca_cert(self, text: str | None) -> str | None:
        return pem.certificates(text)

    def validate_client_cert(self, text: str | None) -> str | None:
        return pem.certificates(text)

    def validate_client_key(self, text: str | None) -> str | None:
        return pem.private_key(text)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """The remote as it would be saved must pass `Remote.clean` (downloader installed, settings sane);
        a change clears the secrets it would expose that the request does not give again (Remote.safe_change)."""
        if self.instance is not None:
            attrs = self.instance.safe_change(attrs)
        candidate = copy.copy(self.instance) if self.instance is not None else Remote()
        for name, value in attrs.items():
            setattr(candidate, name, value)
        try:
            candidate.clean()
        except DjangoValidationError as error:
            field = _field_of(error.__cause__, self.fields)
            raise (DjangoValidationError({field: error.messages}) if field else error) from error.__cause__
        return attrs


def _field_of(refusal: BaseException | None, fields: Collection[str]) -> str | None:
    """The field a remote's refusal (Remote.clean) is about, so that its 400 keys the message by it, as DRF and
    Pulp do: the downloader when none by its name is installed, else the setting its message starts with
    (downloaders/settings.py's messages all start with one); None when it names no field."""
    if isinstance(refusal, UnknownDownloader):
        return "downloader"
    named = re.match(r"\w+", str(refusal or ""))
    return named.group() if named and named.group() in fields else None


def _allowed(url: str) -> str:
    """`url`, if it is http or https (DRF's URLField drops the model's URLValidator, and takes ftp://) and
    the service's remote-address policy lets syncs fetch from its host; else a 400 saying why."""
    try:
        check_url(url)
        settings.PULP_SYNC_ADDRESS_POLICY.check_url(url)
    except (UnsupportedURL, AddressRefused) as error:
        raise serializers.ValidationError(str(error)) from error
    return url
