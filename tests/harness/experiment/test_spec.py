"""Specs: the shipped ones load, mistakes are caught when the file is read, overrides re-check."""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

import pytest

from downloaders import available
from downloaders.settings import REMOTE_SETTINGS
from fixtures.limits import ConnectionLimit
from fixtures.profiles import PROFILES
from harness.experiment.spec import (
    Experiment,
    SpecError,
    experiment_from_dict,
    experiment_from_record,
    load_spec,
    manifest_path,
    spec_schema,
)
from harness.experiment.variant import VARIANT_KINDS, PulpSyncVariant
from harness.run.fixture_site import check_site, resolve_limit, resolve_profile
from harness.variants.pulp_sync_cli import sync_arguments

EXPERIMENTS = Path(__file__).resolve().parents[3] / "experiments"


def _spec(**changes: object) -> dict[str, object]:
    data: dict[str, object] = {"name": "t", "variants": [{"name": "a", "downloader": "asyncio"}]}
    data.update(changes)
    return data


def test_seed_002_is_the_seeds_matrix() -> None:
    spec = load_spec(EXPERIMENTS / "seed-002.toml")
    assert spec.manifests == ("100", "200", "300", "400", "500")
    assert (spec.runs, spec.warmup, spec.profile, spec.server) == (10, 1, "wan", "builtin")
    assert [(v.downloader, v.download_concurrency) for v in spec.variants] == [("asyncio", 10), ("futures", 10)]
    assert spec.baseline_variant.name == "futures"


def test_era_defaults_use_the_concurrency_of_that_time() -> None:
    spec = load_spec(EXPERIMENTS / "seed-002-era-defaults.toml")
    assert {v.downloader: v.download_concurrency for v in spec.variants} == {"asyncio": 100, "futures": 4}


@pytest.mark.parametrize("path", sorted(EXPERIMENTS.glob("*.toml")), ids=lambda path: path.name)
def test_every_shipped_experiment_is_valid_and_its_downloaders_installed(path: Path) -> None:
    spec = load_spec(path)
    assert spec.name == path.stem and spec.variants
    installed = set(available())
    assert {v.downloader for v in spec.variants if v.kind == "pulp-sync"} <= installed


def test_round_trip_through_json_values() -> None:
    spec = load_spec(EXPERIMENTS / "seed-002.toml")
    assert experiment_from_dict(spec.as_dict()) == spec


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"runs": 0}, "runs"),
        ({"scale": 0}, "scale"),
        ({"band": 1.5}, "band = 1.5: the band of practical equivalence"),
        ({"server": "apache"}, "server"),
        ({"baseline": "nope"}, "no variant named"),
        ({"colour": "red"}, "unknown keys"),
        ({"variants": []}, r"no \[\[variants\]\]"),
        ({"variants": [{"name": "a"}]}, "^variant 'a': downloader is missing: name one"),
        ({"variants": [{"name": "a", "downloader": "x"}, {"name": "a", "downloader": "y"}]}, "unique"),
        ({"variants": [{"name": "a", "downloader": "x", "tasking": "celery"}]}, "is not one of inline, rq"),
        ({"variants": [{"name": "a b", "downloader": "x"}]}, "letters"),
        ({"variants": [{"name": "a", "downloader": "x", "download_concurrency": 2_000_000_000}]},
         "^variant 'a': download_concurrency must be from 1 to 256, not 2000000000$"),
        ({"variants": [{"name": "a", "downloader": "x", "processes": 0}]},
         "^variant 'a': processes must be from 1 to 256, or auto, not 0$"),
        ({"variants": [{"name": "a", "downloader": "x", "processes": "all"}]},
         "^variant 'a': processes must be a whole number from 1 up, or auto, not 'all'$"),
        ({"variants": [{"name": "c", "kind": "command", "command": "curl {curl_config}", "processes": 2}]},
         "^variant 'c': a command variant takes name, kind, download_concurrency, profile, manifests, env, remote, "
         "command; "
         "not processes \\(kind = \"pulp-sync\" takes it\\)$"),
        ({"variants": [{"name": "a", "downloader": "x", "workers": 2, "hosts": 1}]},
         "^variant 'a': a pulp-sync variant takes name, kind, download_concurrency, profile, manifests, env, remote, "
         "downloader, processes, db, sync_args, tasking; not workers, hosts \\(tasking = \"rq\" takes them\\)$"),
        ({"variants": [{"name": "a", "downloader": "x", "tasking": "rq", "server": "pulpcore"}]},
         "^variant 'a': a pulp-sync variant with tasking = \"rq\" takes .*, repositories; not server "
         "\\(kind = \"pulp-api\" takes it\\)$"),
        ({"variants": [{"name": "a", "kind": "pulp-api", "server": "pulpcore", "command": "curl", "x": 1}]},
         "^variant 'a': a pulp-api variant takes name, kind, download_concurrency, profile, manifests, env, remote, "
         "server, api_username, api_password, db; not command, x$"),
    ],
)
def test_mistakes_are_caught_when_read(changes: dict[str, object], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        experiment_from_dict(_spec(**changes))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"runs": "10"}, "^runs = '10': a whole number$"),
        ({"timeout": "600"}, "^timeout = '600': a number$"),
        ({"sample": 500}, "^sample = 500: a string$"),
        ({"restart_server": 1}, "^restart_server = 1: true or false$"),
        ({"alpha": True}, "^alpha = True: a number$"),
        ({"variants": [{"name": "a", "downloader": "x", "download_concurrency": "4"}]},
         "^variant 'a': download_concurrency = '4': a whole number or \"auto\"$"),
        ({"variants": [{"name": "a", "downloader": "x", "db": 5}]}, "^variant 'a': db = 5: a string$"),
        ({"variants": [{"name": "a", "downloader": "x", "tasking": "rq", "hosts": "2"}]},
         "^variant 'a': hosts = '2': a whole number$"),
    ],
)
def test_a_value_of_the_wrong_type_is_refused_naming_its_key(changes: dict[str, object], message: str) -> None:
    """Not a TypeError from a check or a run further on: one line that says which key."""
    with pytest.raises(SpecError, match=message):
        experiment_from_dict(_spec(**changes))


def test_processes_are_a_number_or_auto_and_reach_the_sync_command() -> None:
    spec = load_spec(EXPERIMENTS / "cores.toml")
    given = {v.name: v.processes for v in spec.variants if isinstance(v, PulpSyncVariant)}
    assert (given["asyncio"], given["asyncio-p4"], given["pycurl-auto"]) == (1, 4, "auto")
    arguments, _ = sync_arguments("http://127.0.0.1:1/PULP_MANIFEST", spec.variant("futures-auto"))
    assert arguments[arguments.index("--processes") + 1] == "auto"


def test_a_whole_number_is_a_number_and_none_is_kept_where_allowed() -> None:
    spec = experiment_from_dict(_spec(timeout=60, alpha=0.05, baseline=None))
    assert (spec.timeout, spec.baseline) == (60, None)


def test_overrides_are_checked_again() -> None:
    spec = experiment_from_dict(_spec())
    assert spec.with_overrides(runs=3, scale=None).runs == 3
    with pytest.raises(SpecError):
        spec.with_overrides(runs=-1)


def test_a_missing_file_says_where_to_look(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="experiments/"):
        load_spec(tmp_path / "none.toml")


def test_manifest_names() -> None:
    assert manifest_path("300") == "PULP_MANIFEST_300"
    assert manifest_path("many-small") == "many-small/PULP_MANIFEST"
    assert manifest_path("PULP_MANIFEST") == "PULP_MANIFEST"


def test_custom_profiles_build_on_a_named_one() -> None:
    custom = {"throttled": {"base": "lan", "latency": 0.2}}
    profile = resolve_profile("throttled", custom)
    assert (profile.name, profile.latency, profile.per_connection_bps) == ("throttled", 0.2, 100_000_000)
    with pytest.raises(SpecError, match="known"):
        resolve_profile("moon", custom)


def test_a_custom_profile_may_limit_its_servers_connections() -> None:
    custom = {"limited": {"base": "shared", "max_connections": 8, "limit_status": 429, "limit_retry_after": 2}}
    assert resolve_limit("limited", custom) == ConnectionLimit(8, status=429, retry_after=2)
    assert resolve_profile("limited", custom) == dataclasses.replace(PROFILES["shared"], name="limited")
    assert resolve_limit("wan", custom) is None and resolve_limit("limited", {"limited": {"base": "wan"}}) is None
    contended = resolve_profile("busy", {"busy": {"base": "wan", "contention_knee": 4, "contention_penalty": 0.1}})
    assert contended.total_rate(14) == PROFILES["wan"].total_bps / 2


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"max_connections": 0}, "profile 'limited': max_connections must be a whole number, 1 or more, got 0"),
        ({"max_connections": "8"}, "profile 'limited': max_connections must be a whole number, 1 or more, got '8'"),
        ({"max_connections": 8, "limit_status": 500}, "profile 'limited': limit_status must be 503 or 429, got 500"),
        ({"limit_status": 429}, "profile 'limited': limit_status and limit_retry_after need max_connections"),
    ],
)
def test_a_mistaken_connection_limit_is_one_line(values: dict[str, object], message: str) -> None:
    with pytest.raises(SpecError) as refused:
        check_site(experiment_from_dict(_spec(profile="limited", profiles={"limited": values})))
    assert str(refused.value) == message


def test_nginx_cannot_limit_connections() -> None:
    spec = experiment_from_dict(_spec(server="nginx", profile="limited", profiles={"limited": {"max_connections": 4}}))
    with pytest.raises(SpecError, match="has no connection limit"):
        check_site(spec)


def test_nginx_cannot_serve_a_shaped_profile() -> None:
    spec = Experiment(**{**experiment_from_dict(_spec()).__dict__, "server": "nginx", "profile": "wan"})
    with pytest.raises(SpecError, match="cannot shape"):
        check_site(spec)
    check_site(spec.with_overrides(profile="loopback"))


@pytest.mark.parametrize(
    ("remote", "message"),
    [
        ({"headers": {"X-Trace": "a\r\nX-Injected: 1"}}, "headers: the value of X-Trace holds CR, LF or NUL"),
        ({"headers": {"X-Trace": "a\u0000b"}}, "headers: the value of X-Trace holds CR, LF or NUL"),
        ({"sock_read_timeout": 1e308}, "sock_read_timeout must be a positive number of seconds, at most"),
        ({"rate_limit": 1e-308}, "rate_limit is requests per second, finite and at least"),
        ({"proxy_url": "ftp://127.0.0.1:21"}, "proxy_url: only http and https URLs are fetched, not 'ftp'"),
    ],
)
def test_a_remote_setting_no_sync_can_use_is_refused_naming_it(remote: dict[str, object], message: str) -> None:
    """The rules of downloaders/settings.py, which the command line and the API apply too."""
    with pytest.raises(SpecError) as refused:
        experiment_from_dict(_spec(remote=remote))
    assert str(refused.value).startswith(f"[remote]: {message}") and "\n" not in str(refused.value)
    variant = {"name": "a", "downloader": "asyncio", "remote": remote}
    with pytest.raises(SpecError, match=r"^variant 'a': remote: " + message.split(" ")[0]):
        experiment_from_dict(_spec(variants=[variant]))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"manifests": "100"}, "manifests = '100': a list of strings"),
        ({"manifests": [100]}, "manifests[0] = 100: a string"),
        ({"variants": "asyncio"}, "variants = 'asyncio': a list of tables"),
        ({"variants": ["asyncio"]}, "variants[0] = 'asyncio': a table"),
        ({"variants": [{"downloader": "x"}]}, "variant 1: name is missing: a string"),
        ({"variants": [{"name": "a", "downloader": "x", "env": {"A": 1}}]}, "variant 'a': env.A = 1: a string"),
        ({"variants": [{"name": "a", "downloader": "x", "sync_args": ["-v", 2]}]},
         "variant 'a': sync_args[1] = 2: a string"),
        ({"variants": [{"name": "a", "downloader": "x", "processes": 2.5}]},
         "variant 'a': processes = 2.5: a whole number or a string"),
        ({"profiles": {"slowish": 1}}, "profiles.slowish = 1: a table"),
        ({"remote": "fast"}, "remote = 'fast': a table"),
        ({"remote": {"rate_limit": "20"}},
         "[remote]: rate_limit = '20': a number, or a reference (env:VAR, file:PATH)"),
        ({"remote": {"headers": "X-Trace: 1"}},
         "[remote]: headers = 'X-Trace: 1': a table, or a reference (env:VAR, file:PATH)"),
    ],
)
def test_a_value_is_taken_as_written_and_a_mistake_named_in_one_line(changes: dict[str, object], message: str) -> None:
    """No text read as a number and no string as a list: the key (a dotted path within its variant), the value
    and what the field takes, from its type."""
    with pytest.raises(SpecError) as refused:
        experiment_from_dict(_spec(**changes))
    assert str(refused.value) == message


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"rusn": 3}, "rusn = 3: unknown keys are refused (a typo?); did you mean runs?"),
        ({"variants": [{"name": "a", "downlaoder": "asyncio"}]},
         "variant 'a': downlaoder = 'asyncio': unknown keys are refused (a typo?); did you mean downloader?"),
        ({"remote": {"rate_limt": 5}}, "[remote]: no remote setting named 'rate_limt'; did you mean rate_limit?"),
        ({"server": "ngnix"}, "server 'ngnix' is not one of builtin, nginx; did you mean nginx?"),
        ({"variants": [{"name": "a", "downloader": "x", "tasking": "rq", "worker": "forked"}]},
         "variant 'a': worker 'forked' is not one of fork, simple; did you mean fork?"),
        ({"variants": [{"name": "a", "kind": "comand", "command": "curl {curl_config}"}]},
         "variant 'a': kind 'comand' is not one of pulp-sync, command, pulp-api; did you mean command?"),
        ({"baseline": "asyncoi", "variants": [{"name": "asyncio", "downloader": "asyncio"}]},
         "no variant named 'asyncoi'; did you mean asyncio?; the spec has: asyncio"),
    ],
)
def test_a_near_miss_is_named(changes: dict[str, object], message: str) -> None:
    with pytest.raises(SpecError) as refused:
        experiment_from_dict(_spec(**changes))
    assert str(refused.value) == message


def test_a_results_folders_record_of_every_field_is_read_but_a_spec_gets_no_such_leniency() -> None:
    """Folders written when one class held every kind's fields recorded all of them for every variant; another
    kind's field at its old default is dropped when reading one, never when reading a spec."""
    unused = {"downloader": "", "processes": 1, "db": None, "tasking": "inline", "worker": None, "workers": 1,
              "hosts": 0, "repositories": 1, "sync_args": [], "command": None, "server": None,
              "api_username": "admin", "api_password": None}
    recorded = [{**unused, "name": "a", "kind": "pulp-sync", "downloader": "asyncio"},
                {**unused, "name": "q", "kind": "pulp-sync", "downloader": "asyncio", "tasking": "rq", "workers": 2},
                {**unused, "name": "c", "kind": "command", "command": "curl --config {curl_config}"},
                {**unused, "name": "p", "kind": "pulp-api", "server": "pulpcore"}]
    read = experiment_from_record(_spec(variants=recorded))

    assert [type(variant).__name__ for variant in read.variants] == ["InlineVariant", "RqVariant", "CommandVariant",
                                                                     "PulpApiVariant"]
    assert experiment_from_record(read.as_dict()) == experiment_from_dict(read.as_dict()) == read
    with pytest.raises(SpecError, match="^variant 'c': a command variant takes .*; not downloader, processes, db, "):
        experiment_from_dict(_spec(variants=recorded[2:]))
    with pytest.raises(SpecError, match="^variant 'c': a command variant takes .*; not workers "):
        experiment_from_record(_spec(variants=[{**recorded[2], "workers": 3}]))


def test_a_manifests_url_as_the_remote_is_the_one_manifest_unless_the_spec_names_several() -> None:
    """As --remote takes it: no `manifests` means the URL's own; several named with it is a mistake."""
    url = "https://repo.example/fedora/PULP_MANIFEST"
    assert experiment_from_dict(_spec(base_url=url)).manifests == ("fedora",)
    assert experiment_from_dict(_spec(base_url=url, manifests=["mine"])).manifests == ("mine",)
    with pytest.raises(SpecError, match="^the remote https://repo.example/fedora/PULP_MANIFEST is one manifest's URL, "
                                        "but 2 manifests are named; give a base URL ending in / "):
        experiment_from_dict(_spec(base_url=url, manifests=["a", "b"]))


def test_an_unknown_key_far_from_any_lists_the_keys() -> None:
    with pytest.raises(SpecError, match=r"^colour = 'red': unknown keys are refused \(a typo\?\); the keys are: name, "
                                        r"variants, manifests, .*, sample_seed$"):
        experiment_from_dict(_spec(colour="red"))


def test_the_schema_documents_every_key_and_takes_the_remote_settings_from_their_home() -> None:
    """Each key with its type and help; the Remote settings made from downloaders.REMOTE_SETTINGS (their help
    included), not restated."""
    schema = spec_schema()
    kinds = [schema["$defs"][kind.__name__] for kind in VARIANT_KINDS.values()]
    assert schema["required"] == ["variants"], "name defaults to the file's"
    assert schema["properties"]["runs"]["type"] == "integer" and schema["properties"]["scale"]["type"] == "number"
    assert schema["properties"]["manifests"] == {**schema["properties"]["manifests"], "type": "array",
                                                 "items": {"type": "string"}}
    assert [kind["properties"]["tasking"]["const"] for kind in kinds[:2]] == ["inline", "rq"]
    assert [kind["required"] for kind in kinds] == [["name", "downloader"], ["name", "downloader", "tasking"],
                                                    ["name", "kind", "command"], ["name", "kind", "server"]]
    for table in (schema, *kinds):
        assert table["additionalProperties"] is False
        assert all(entry.get("description") for entry in table["properties"].values()), table["properties"]
    remote = schema["properties"]["remote"]["properties"]
    assert all(remote == kind["properties"]["remote"]["properties"] for kind in kinds)
    assert set(remote) == {setting.name for setting in REMOTE_SETTINGS} - {"download_concurrency", "auto_concurrency"}
    assert all(remote[setting.name]["description"].startswith(setting.help) for setting in REMOTE_SETTINGS
               if setting.name in remote)


@pytest.mark.parametrize("path", sorted(EXPERIMENTS.glob("*.toml")), ids=lambda path: path.name)
def test_every_shipped_experiment_passes_the_printed_schema(path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(tomllib.loads(path.read_text(encoding="utf-8")), spec_schema())


def test_a_pulp_sync_variant_takes_auto_and_its_sync_is_told_so() -> None:
    """`download_concurrency = "auto"` reaches `pulp-sync sync --download-concurrency auto`, with the Remote's
    max_concurrency from [remote] beside it; the schema offers the word."""
    auto = {"name": "a", "downloader": "asyncio", "download_concurrency": "auto"}
    spec = experiment_from_dict(_spec(remote={"max_concurrency": 32}, variants=[auto]))
    (variant,) = spec.variants
    assert variant.auto_concurrency
    assert spec.remote_of(variant) == {"max_concurrency": 32, "download_concurrency": "auto"}
    arguments, _ = sync_arguments("http://127.0.0.1:1/PULP_MANIFEST", variant, spec.remote_of(variant))
    assert arguments[arguments.index("--download-concurrency") + 1] == "auto"
    assert arguments[arguments.index("--max-concurrency") + 1] == "32"
    assert experiment_from_dict(spec.as_dict()) == spec
    choices = spec_schema()["$defs"]["InlineVariant"]["properties"]["download_concurrency"]["anyOf"]
    assert {"enum": ["auto"], "type": "string"} in choices or {"const": "auto", "type": "string"} in choices, choices


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"variants": [{"name": "curl", "kind": "command", "command": "curl --parallel-max {concurrency}",
                        "download_concurrency": "auto"}]},
         "variant 'curl': download_concurrency = \"auto\": a program's {concurrency} is one number, which it cannot "
         "adapt while it runs; give it a number"),
        ({"variants": [{"name": "p", "kind": "pulp-api", "server": "pulpcore", "download_concurrency": "auto"}]},
         "variant 'p': download_concurrency = \"auto\": a Pulp server's sync takes the number its remote is given "
         "(Pulp's download_concurrency is an integer) and cannot adapt it; give it a number"),
        ({"variants": [{"name": "a", "downloader": "asyncio", "download_concurrency": "Auto"}]},
         "variant 'a': download_concurrency = 'Auto': a whole number or \"auto\""),
        ({"remote": {"auto_concurrency": True}}, "[remote]: set download_concurrency = \"auto\" on the variant itself"),
        ({"variants": [{"name": "a", "downloader": "asyncio", "remote": {"auto_concurrency": True}}]},
         "variant 'a': remote: set download_concurrency = \"auto\" on the variant itself"),
        ({"remote": {"max_concurrency": 0}}, "[remote]: max_concurrency must be from 1 to 256, not 0"),
    ],
    ids=["command", "pulp-api", "a-typo", "remote-table", "variant-remote", "max-concurrency-range"],
)
def test_auto_is_refused_where_nothing_can_find_the_concurrency_in_one_line(changes: dict[str, object],
                                                                            message: str) -> None:
    with pytest.raises(SpecError) as refused:
        experiment_from_dict(_spec(**changes))
    assert str(refused.value) == message


def test_a_variant_runs_some_of_the_experiments_manifests_only() -> None:
    spec = experiment_from_dict(_spec(manifests=["100", "many-small"], variants=[
        {"name": "a", "downloader": "asyncio"}, {"name": "b", "downloader": "asyncio", "manifests": ["many-small"]}]))
    assert spec.manifests_of(spec.variant("a")) == ("100", "many-small")
    assert [variant.name for variant in spec.variants_of("100")] == ["a"]
    assert [(manifest, variant.name) for manifest, variant in spec.cells] == [
        ("100", "a"), ("many-small", "a"), ("many-small", "b")]
    assert experiment_from_dict(spec.as_dict()) == spec


@pytest.mark.parametrize(("manifests", "message"), [
    (["many-smal"], "variant 'b': manifests: 'many-smal' is not one of the experiment's (100, many-small); "
                    "did you mean many-small?"),
    (["fedora"], "variant 'b': manifests: 'fedora' is not one of the experiment's (100, many-small)"),
    ([], "variant 'b': manifests is empty; name some of the experiment's (100, many-small), or leave it out to run "
         "them all"),
    ("100", "variant 'b': manifests = '100': a list of strings"),
])
def test_a_variants_manifest_outside_the_experiments_is_one_line(manifests: object, message: str) -> None:
    with pytest.raises(SpecError) as refused:
        experiment_from_dict(_spec(manifests=["100", "many-small"],
                                   variants=[{"name": "b", "downloader": "asyncio", "manifests": manifests}]))
    assert str(refused.value) == message


def test_sweep_groups_are_per_profile_where_the_variants_profiles_differ() -> None:
    one = experiment_from_dict(_spec(variants=[{"name": "a", "downloader": "asyncio"},
                                               {"name": "b", "downloader": "futures"}]))
    assert [one.group_of(variant) for variant in one.variants] == ["asyncio", "futures"]
    lan = {"name": "b", "downloader": "asyncio", "profile": "lan"}
    two = experiment_from_dict(_spec(profile="wan", variants=[{"name": "a", "downloader": "asyncio"}, lan]))
    assert [two.group_of(variant) for variant in two.variants] == ["asyncio (wan)", "asyncio (lan)"]
