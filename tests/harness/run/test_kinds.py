"""The kinds of variant (harness.run.kinds): every variant a spec can hold has one, and the runner never
asks which it is."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from harness.experiment.spec import SpecError, experiment_from_dict
from harness.experiment.variant import VARIANT_KINDS, kind_tag
from harness.run import runner
from harness.run.kinds import KINDS


@pytest.mark.parametrize(
    ("variant", "kind"),
    [
        ({"downloader": "asyncio"}, "pulp-sync"),
        ({"downloader": "asyncio", "kind": "pulp-sync", "tasking": "inline"}, "pulp-sync"),
        ({"downloader": "asyncio", "tasking": "rq"}, "pulp-sync-rq"),
        ({"kind": "command", "command": "curl --config {curl_config}"}, "command"),
        ({"kind": "pulp-api", "server": "pulp-sync"}, "pulp-api"),
        ({"kind": "pulp-api", "server": "pulpcore"}, "pulp-api"),
    ],
)
def test_every_variant_is_read_as_its_kinds_class_and_has_a_registered_runner(variant: dict[str, Any],
                                                                              kind: str) -> None:
    read = experiment_from_dict({"name": "e", "variants": [{"name": "v", **variant}]}).variants[0]

    assert type(read) is VARIANT_KINDS[kind] and kind_tag(read) == kind_tag({"name": "v", **variant}) == kind
    assert kind in KINDS


def test_the_kinds_of_variants_and_their_runners_are_the_same_set() -> None:
    assert set(VARIANT_KINDS) == set(KINDS)


def test_a_command_that_is_not_installed_is_refused_by_its_kind() -> None:
    experiment = experiment_from_dict({"name": "e", "variants": [
        {"name": "v", "kind": "command", "command": "no-such-program-here {curl_config}"}]})

    with pytest.raises(SpecError, match="'no-such-program-here' is not installed"):
        KINDS["command"]().check(experiment.variants[0])


def test_the_runner_never_asks_which_kind_a_variant_is() -> None:
    source = Path(runner.__file__).read_text(encoding="utf-8")
    asked = {node.attr for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Attribute)}

    assert asked.isdisjoint({"kind", "tasking", "server", "is_command", "is_pulp_api"})
